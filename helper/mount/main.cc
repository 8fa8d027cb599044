#include "helper/mount/mounthelper.h"

int main(int argc, char** argv) {
  if (!lazaret::mounthelper::ExitWithParent()) return 1;
  return lazaret::ServiceMain(lazaret::mounthelper::Spec(), argc, argv);
}
