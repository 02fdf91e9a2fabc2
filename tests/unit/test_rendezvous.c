/*
 * test_rendezvous.c - the one-host rendezvous file (src/comm/rendezvous.c): what rank 0 publishes
 * the other ranks read back, and a file that rank 0 of this user cannot have written (open to
 * others, a symbolic link, another user's, not a regular file) is refused with an error that
 * names the path, the owner and the mode. A file whose writer has ended is stale: not followed,
 * but waited on. Each test works in a fresh directory of its own.
 */
#include "comm/launch.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64], path[128];
static struct tutti_rdv_owner owner; /* what the last read learned of the writer */

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tutti-test-rdv-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    snprintf(path, sizeof(path), "%s/job.root", dir);
}

static void remove_dir(void)
{
    char other[160];
    snprintf(other, sizeof(other), "%s/other", dir);
    unlink(path);
    unlink(other);
    rmdir(dir);
}

/* An id as rank 0 would publish it: 127.0.0.1:29600 and a recognizable secret. */
static struct tutti_boot_id sample_id(void)
{
    struct tutti_boot_id id;
    memset(&id, 0, sizeof(id));
    cr_assert_eq(tutti__sockaddr_parse("127.0.0.1:29600", -1, 0, &id.root), TUTTI_OK);
    for (int i = 0; i < TUTTI_SECRET_BYTES; i++) {
        id.secret[i] = (uint8_t)(0xa0 + i);
    }
    return id;
}

/* A plain file with the bytes of a valid publication and the given mode. */
static void plant(const char *where, mode_t mode)
{
    struct tutti_boot_id id = sample_id();
    cr_assert_eq(tutti__rendezvous_publish(where, &id, 4), TUTTI_OK);
    cr_assert_eq(chmod(where, mode), 0, "chmod: %s", strerror(errno));
}

static void assert_refused(const char *what)
{
    struct tutti_boot_id got;
    memset(&got, 0, sizeof(got));
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_ERR_INVALID_USAGE,
                 "%s was accepted", what);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, path) != NULL, "the error does not name the path: %s", msg);
    cr_assert(strstr(msg, "refusing") != NULL, "the error does not say it refuses: %s", msg);
    static const uint8_t zero[TUTTI_SECRET_BYTES];
    cr_assert(memcmp(got.secret, zero, sizeof(zero)) == 0, "a refused file's secret was used");
}

TestSuite(rendezvous, .init = make_dir, .fini = remove_dir);

Test(rendezvous, what_rank_0_publishes_is_read_back_with_mode_0600)
{
    struct tutti_boot_id id = sample_id(), got;
    memset(&got, 0, sizeof(got));
    cr_assert_eq(tutti__rendezvous_publish(path, &id, 4), TUTTI_OK, "%s", tutti_last_error(NULL));
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0600, "published with mode %04o", sb.st_mode & 07777);
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_OK, "%s",
                 tutti_last_error(NULL));
    cr_assert_eq(memcmp(got.secret, id.secret, TUTTI_SECRET_BYTES), 0);
    cr_assert_eq(got.root.in.sin_port, id.root.in.sin_port);
    cr_assert_eq(got.root.in.sin_addr.s_addr, id.root.in.sin_addr.s_addr);
}

Test(rendezvous, publishing_replaces_a_stale_file_and_leaves_no_temporary)
{
    plant(path, 0600);
    struct tutti_boot_id id = sample_id();
    id.secret[0] = 0x55;
    cr_assert_eq(tutti__rendezvous_publish(path, &id, 4), TUTTI_OK, "%s", tutti_last_error(NULL));
    struct tutti_boot_id got;
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_OK);
    cr_assert_eq(got.secret[0], 0x55);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 1", dir);
    cr_assert_eq(system(cmd), 0, "a temporary file was left in %s", dir);
}

Test(rendezvous, a_missing_file_is_not_there_yet)
{
    struct tutti_boot_id got;
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_IN_PROGRESS);
}

Test(rendezvous, a_file_others_may_write_is_refused_naming_path_owner_and_mode)
{
    plant(path, 0666);
    assert_refused("a file of mode 0666");
    char owner[32];
    snprintf(owner, sizeof(owner), "owner uid %u", (unsigned)getuid());
    cr_assert(strstr(tutti_last_error(NULL), owner) != NULL, "no '%s' in: %s", owner,
              tutti_last_error(NULL));
    cr_assert(strstr(tutti_last_error(NULL), "mode 0666") != NULL, "no mode in: %s",
              tutti_last_error(NULL));
}

Test(rendezvous, a_file_the_group_may_read_is_refused)
{
    plant(path, 0640);
    assert_refused("a file of mode 0640");
    cr_assert(strstr(tutti_last_error(NULL), "mode 0640") != NULL, "%s", tutti_last_error(NULL));
}

Test(rendezvous, a_symbolic_link_is_refused)
{
    char other[160];
    snprintf(other, sizeof(other), "%s/other", dir);
    plant(other, 0600);
    cr_assert_eq(symlink(other, path), 0, "symlink: %s", strerror(errno));
    assert_refused("a symbolic link");
    cr_assert(strstr(tutti_last_error(NULL), "symbolic link") != NULL, "%s",
              tutti_last_error(NULL));
}

Test(rendezvous, a_fifo_is_refused_without_blocking, .timeout = 10)
{
    cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo: %s", strerror(errno));
    assert_refused("a FIFO");
    cr_assert(strstr(tutti_last_error(NULL), "not a regular file") != NULL, "%s",
              tutti_last_error(NULL));
}

Test(rendezvous, a_file_of_another_user_is_refused)
{
    if (geteuid() != 0) {
        cr_skip_test("giving a file to another user needs root");
    }
    plant(path, 0600);
    cr_assert_eq(chown(path, 65534, 65534), 0, "chown: %s", strerror(errno));
    assert_refused("another user's file");
    cr_assert(strstr(tutti_last_error(NULL), "owner uid 65534") != NULL, "%s",
              tutti_last_error(NULL));
}

Test(rendezvous, the_file_names_its_writer_and_the_number_of_ranks)
{
    struct tutti_boot_id id = sample_id(), got;
    cr_assert_eq(tutti__rendezvous_publish(path, &id, 6), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_OK, "%s",
                 tutti_last_error(NULL));
    cr_assert_eq(owner.pid, (uint32_t)getpid());
    cr_assert_eq(owner.nranks, 6);
    cr_assert(!owner.stale, "the file of a running writer was taken for stale");
}

/* A rank 0 that published and ended (killed): its file is not followed, and said to be stale. */
Test(rendezvous, a_file_whose_writer_has_ended_is_stale)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        struct tutti_boot_id id = sample_id();
        _exit(tutti__rendezvous_publish(path, &id, 2) == TUTTI_OK ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child could not publish");
    struct tutti_boot_id got;
    memset(&got, 0, sizeof(got));
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_IN_PROGRESS,
                 "a file of a writer that has ended was followed");
    cr_assert(owner.stale && owner.pid == (uint32_t)pid, "stale %d, pid %u (writer %d)",
              owner.stale, owner.pid, (int)pid);
    static const uint8_t zero[TUTTI_SECRET_BYTES];
    cr_assert(memcmp(got.secret, zero, sizeof(zero)) == 0, "a stale file's secret was used");
    /* The next rank 0 replaces it. */
    struct tutti_boot_id id = sample_id();
    cr_assert_eq(tutti__rendezvous_publish(path, &id, 2), TUTTI_OK);
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_OK);
    cr_assert(!owner.stale);
}

/* A file of another format (an older tutti's) has no writer to wait for: stale too. */
Test(rendezvous, a_file_of_another_format_is_stale)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert(fd >= 0);
    static const char old[36] = "an older version's bytes";
    cr_assert_eq(write(fd, old, sizeof(old)), (ssize_t)sizeof(old));
    close(fd);
    struct tutti_boot_id got;
    cr_assert_eq(tutti__rendezvous_read(path, &got, &owner), TUTTI_IN_PROGRESS);
    cr_assert(owner.stale);
}

/* Issue 36: in /tmp another user can make the file's name first and stop a one-host job. The
 * user's own runtime directory (XDG_RUNTIME_DIR, mode 700) is used when there is one; a
 * directory others may enter, or a relative path, is not. */
Test(rendezvous, the_file_goes_to_the_users_own_runtime_directory)
{
    char got[256], want[80];
    snprintf(want, sizeof(want), "%s/tutti-%u-", dir, (unsigned)getuid());
    setenv("XDG_RUNTIME_DIR", dir, 1); /* mkdtemp's: this user's, mode 700 */
    tutti__rendezvous_path("slurm-7-0-", got, sizeof(got));
    cr_assert(strncmp(got, want, strlen(want)) == 0, "%s is not in %s", got, dir);
    cr_assert_eq(chmod(dir, 0755), 0);
    tutti__rendezvous_path("slurm-7-0-", got, sizeof(got));
    cr_assert(strncmp(got, "/tmp/tutti-", 11) == 0, "a directory open to others was used: %s", got);
    setenv("XDG_RUNTIME_DIR", "run/user", 1);
    tutti__rendezvous_path("slurm-7-0-", got, sizeof(got));
    cr_assert(strncmp(got, "/tmp/tutti-", 11) == 0, "a relative directory was used: %s", got);
    unsetenv("XDG_RUNTIME_DIR");
}
