#include "services/netpolicyd/netpolicyd.h"

int main(int argc, char** argv) {
  return lazaret::ServiceMain(lazaret::netpolicyd::Spec(), argc, argv);
}
