#include "services/egressd/egressd.h"

int main(int argc, char** argv) {
  return lazaret::ServiceMain(lazaret::egressd::Spec(), argc, argv);
}
