#include "services/configd/configd.h"

int main(int argc, char** argv) {
  return lazaret::ServiceMain(lazaret::configd::Spec(), argc, argv);
}
