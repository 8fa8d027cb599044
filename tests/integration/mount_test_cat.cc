// A static `cat` for mount_helper_test's scratch image, so a container can
// show what it sees in a merged directory.
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char** argv) {
  char buf[4096];
  for (int i = 1; i < argc; ++i) {
    const int fd = open(argv[i], O_RDONLY);
    if (fd < 0) return 1;
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
      if (write(1, buf, n) != n) return 1;
    }
    close(fd);
  }
  return 0;
}
