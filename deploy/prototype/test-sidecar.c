/* test sidecar: waits for SIGTERM/SIGINT, then exits 0 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t stop;
static void h(int s){(void)s; stop=1;}
int main(void){
  struct sigaction sa={0}; sa.sa_handler=h;
  sigaction(SIGTERM,&sa,0); sigaction(SIGINT,&sa,0);
  printf("sidecar pid %d up\n",(int)getpid()); fflush(stdout);
  while(!stop) pause();
  printf("sidecar: got signal, exiting\n");
  return 0;
}
