#include "helper/mount/mounthelper.h"

int main(int argc, char** argv) {
  return lazaret::ServiceMain(lazaret::mounthelper::Spec(), argc, argv);
}
