#include "sidecar/netrouter.h"

int main(int argc, char** argv) {
  return lazaret::ServiceMain(lazaret::netrouter::Spec(), argc, argv);
}
