#include "services/brokerd/brokerd.h"

int main(int argc, char** argv) {
  return lazaret::ServiceMain(lazaret::brokerd::Spec(), argc, argv);
}
