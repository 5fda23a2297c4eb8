/*
 * child.c: the trivial child of seed 003's fork() + execl() experiment
 * (seeds/003_439cc606f831c39f.txt), built static and dynamic for the 2x2 matrix
 * (static/dynamic parent x static/dynamic child). All it costs is its exec and its exit.
 *
 * Build: cc -O2 -Wall -o child child.c [-static]
 */
int
main(void)
{
    return 0;
}
