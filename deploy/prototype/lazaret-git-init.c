/* Prototype: populate the Git Shadow tmpfs, then exec the agent command.
 * usage: lazaret-git-init <branch> -- cmd args...
 * /workspace/.git is a tmpfs with objects/, refs/, logs/ bind mounts inside;
 * the host .git is read-only at /run/lazaret/git. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define G "/workspace/.git"
#define S "/run/lazaret/git"
static void die(const char *m){ fprintf(stderr,"lazaret-git-init: %s: %s\n",m,strerror(errno)); exit(125); }
static void link_if(const char *name){
  char src[256], dst[256];
  snprintf(src,sizeof src,S "/%s",name); snprintf(dst,sizeof dst,G "/%s",name);
  if (access(src,F_OK)!=0) return;               /* nothing to expose */
  if (symlink(src,dst)!=0 && errno!=EEXIST) die(dst);
}
static void copy_if(const char *name){
  char src[256], dst[256], tmp[264], buf[65536]; ssize_t n;
  snprintf(src,sizeof src,S "/%s",name); snprintf(dst,sizeof dst,G "/%s",name);
  snprintf(tmp,sizeof tmp,"%s.tmp",dst);
  int in=open(src,O_RDONLY|O_CLOEXEC); if(in<0){ if(errno==ENOENT) return; die(src); }
  int out=open(tmp,O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC,0644); if(out<0) die(tmp);
  while((n=read(in,buf,sizeof buf))>0) if(write(out,buf,n)!=n) die(tmp);
  if(n<0) die(src);
  close(in); if(close(out)) die(tmp);
  if(rename(tmp,dst)) die(dst);
}
int main(int argc, char **argv){
  if(argc<4 || strcmp(argv[2],"--")) { fprintf(stderr,"usage: %s BRANCH -- CMD...\n",argv[0]); return 125; }
  link_if("config");            /* EROFS on write; host changes visible at once */
  const char *pr = getenv("LAZARET_PACKED_REFS");   /* prototype switch */
  if (pr && !strcmp(pr,"copy")) copy_if("packed-refs");
  else link_if("packed-refs");  /* live view; lock lands next to target -> EROFS */
  link_if("info");
  link_if("shallow");
  copy_if("index");             /* sandbox-private index */
  char head[300]; int n=snprintf(head,sizeof head,"ref: refs/heads/%s\n",argv[1]);
  int fd=open(G "/HEAD",O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC,0644);
  if(fd<0||write(fd,head,n)!=n||close(fd)) die(G "/HEAD");
  execvp(argv[3],argv+3); die(argv[3]);
}
