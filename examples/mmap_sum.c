/* Memory-map an array's raw.bin from an npzfs mount and sum it.
 *
 *   gcc -O2 -o mmap_sum examples/mmap_sum.c
 *   ./mmap_sum /mnt/data/images/raw.bin
 *
 * raw.bin holds exactly the array's bytes; this one assumes float32
 * (header.json: "dtype": {"str": "<f4"}) and C order, so element i is v[i].
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s KEY/raw.bin\n", argv[0]);
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) { perror("open"); return 1; }
	struct stat st;
	if (fstat(fd, &st) != 0) { perror("fstat"); return 1; }
	size_t n = st.st_size / sizeof(float);
	if (n == 0) { printf("n=0\n"); return 0; }
	const float *v = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (v == MAP_FAILED) { perror("mmap"); return 1; }
	double sum = 0;
	for (size_t i = 0; i < n; i++) sum += v[i];
	printf("n=%zu first=%g second=%g last=%g sum=%.1f\n", n, v[0], v[1], v[n - 1], sum);
	munmap((void *)v, st.st_size);
	close(fd);
	return 0;
}
