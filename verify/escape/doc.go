// Package escape is the escape suite: every attack scenario against the
// confinement, in one place. Its tests are the package; this file only
// documents it.
//
// The threat model: the confined server is an attacker with code execution
// inside its grants. Anything it can write, it will write. Nothing it can
// write may decide how it, or anything on the host, runs next.
//
// Each scenario builds a real project (git repository, policy, `mcpolicy
// build`, `mcpolicy client claude-code --write`), rewrites the server's own
// code (attack.sh) into the attack, and spawns the client entry exactly as
// a client would, under bwrap, docker and podman (and Landlock where the
// policy compiles). It asserts both halves: the attempt fails (the errno the
// attacker saw is logged) or the next launch through the unchanged entry is
// refused with exit code 8; and nothing on the host changed (the sha256 of
// every file under the project's protected names and of a planted $HOME,
// the project's top-level names) and no command ran (host `git status` and
// `git commit` after the attack leave no marker). Each scenario also runs
// once against a weakened wiring built inside the test (the artefact's
// argv or the engine args run without the launcher, protections removed)
// and asserts that the attack succeeds there, so that a pass is not an
// artefact of a harness that cannot see an escape.
//
// The issue #14 scenarios (process_test.go) attack through the process
// rather than the grants' files, on bwrap, docker, podman and Landlock: a
// unix listener the test plants in the host's /tmp and a stand-in socket
// at /run (never /run/docker.sock itself); a variable planted in the
// environment the client gives the entry, looked for in every readable
// /proc/PID/environ; TIOCSTI on a pty that is the entry's stdin and
// controlling terminal (the test reads the master as the user's shell
// would); a user key in the spawning thread's session keyring; the home's
// ~/.aws/credentials and the home folder leaked as descriptors 7 and 8; an
// image VOLUME (docker, podman); chmod u+s and g+s on a file the server
// wrote in its grant. What a shell cannot do there the payload does with
// ./escape-helper (./helper, built static and copied into each project).
// Their weakened wirings are bwrap without the launcher (with the host's
// /tmp and /run bound in, or started with the client's environment, or
// without the seccomp filter), the engine's args without the launcher, or
// no confinement at all ("bare": the payload spawned on the host as a
// client would spawn the entry's command).
//
// The env file scenarios (envfile_test.go) spawn Claude Desktop's entry,
// whose launcher reads the plan's env grant from the user's env file
// ($HOME/.config/mcpolicy/env, 600) holding another server's secret too,
// on bwrap, docker, podman and Landlock: the server must see only the
// granted value and never the file (env-file-read); what it plants in its
// grant (a file, the default path of an $XDG_CONFIG_HOME there, symlinks,
// hard links) must not reach the next launch, and every user
// configuration that would make the entry's file the planted one (the file
// or its folder a symlink into the grant, a hard link, an entry or
// $XDG_CONFIG_HOME naming the grant) must be refused (env-file-plant); it
// cannot write the file (env-file-write); nor reach a file in its grant
// named by its real path while the project is named through a symlink
// (env-file-alias), nor one under /usr, which the sandbox reads
// (env-file-system, bwrap and Landlock). Their weakened wirings are bwrap
// without the launcher behind a naive loader that reads the named file
// (following symlinks, no check) and passes its values in, or with the
// file's folder bound in. The user: "invoker" scenarios (invoker_test.go)
// start the entry as uid 1000 (docker with its group): the server rewrites
// the artefact and the entry with uid 0, plants an artefact saying uid 0,
// widens the policy, and its next launch, from a client whose environment
// says UID=0, must still run as 1000 (invoker-next-uid); a root launch, or
// one in root's group, must be refused on every backend (invoker-root).
// Their weakened wiring is bwrap without the launcher, ${UID} and ${GID}
// put in by whatever reads the artefact: the rewritten artefact runs the
// server as uid 0, and a root launch runs it as root.
//
// The daemon scenario (daemon_test.go, daemon-outlives) starts, from the
// payload, a shell in a new session (setsid: past Pdeathsig and the
// server's process group) that rewrites a file in the grant every 100 ms,
// and returns: once the entry has returned, no process of it may be left
// (at once under Landlock, whose launcher's PID namespace ends with it; within 2 s
// where a PID namespace or a container is being torn down), nor may the
// file change or come back once removed, on bwrap, docker, podman and
// Landlock. Its weakened wiring is "bare": the daemon outlives the command
// and keeps writing.
//
// The terminal scenario (terminal_test.go, terminal) spawns the entry as
// a client started in a terminal does: a pty's slave as its stdin, stdout
// and stderr and its controlling terminal, the test holding the master as
// the user's terminal (the payload's results read from it), on bwrap,
// docker and Landlock (podman's entry takes docker's path through the
// launcher, left out for time). Fds 0-2 (the payload's own) and /dev/tty
// must be no terminal (TCGETS: ENOTTY; /dev/tty ENXIO or EACCES), echo
// cannot be turned off (the pty's ECHO flag unchanged after the run), an
// OSC 52 clipboard sequence written to stdout and stderr must reach the
// terminal spelt out (\x1b...), never raw, and a daemon left in a new
// session holding all three, acting 300 ms later, must reach nothing.
// What the user types reaching the server's stdin through the launcher's
// relay is by design and not checked. Its weakened wiring is "bare": the
// payload holds the pty, turns echo off, and it and its daemon write the
// raw sequence.
//
// The host-throttle scenario (throttle_test.go) starts a victim (`sleep`)
// on the host as the server's uid (the test's, or as root a uid of its
// own, so that PRIO_USER reaches nothing else) and has the payload read
// and set its RLIMIT_CPU (prlimit64), its nice value (setpriority PRIO_PROCESS), and
// renice its whole uid (PRIO_USER, as that own uid only): each must fail
// and /proc/PID/limits and /proc/PID/stat show the victim unchanged. On
// Landlock twice: through the launcher's namespaces (the victim out of
// sight: ESRCH, PRIO_USER the filter's EPERM), and as a host without
// unprivileged user namespaces runs it (the entry spawned in a user
// namespace whose user.max_user_namespaces the helper set to 0: the
// launcher runs Landlock alone, the policy accepts landlock-tcp-only),
// where the victim is in reach (kill(pid, 0) finds it) and only the
// seccomp filter's EPERM answers, to reading its limit and nice value too. Its weakened wiring is "bare": the victim is
// throttled and reniced.
//
// The policy-import scenario (policy_test.go) is a Jsonnet policy whose
// mounts come from mcpolicy.d/grants.libsonnet, the project read-write,
// on bwrap and docker: the server rewrites the library with a ~/.aws
// grant, appends to mcpolicy.jsonnet, plants a library, swaps mcpolicy.d
// for a rewritten copy (all EROFS or EBUSY), and the user's next build
// writes the same artefacts. Once (on bwrap) the build must refuse, before
// anything is written, a policy importing lib/grants.libsonnet and a
// policy named policy.cue in a read-write ".". Its weakened wiring is
// bwrap without the launcher: the library is rewritten and the next
// build grants ~/.aws. git-takeover's project also holds .hg (hgrc) and
// .mvn (jvm.config), and its payload plants [hooks] pre-status in
// .hg/hgrc, a -Xlog:...:file= option (a file written where the server
// chose) in .mvn/jvm.config, and swaps .hg for a planted copy
// (nested-vcs-hook); the host's hg status and mvn -v run once after the
// bwrap run and in the weakened one, where they are installed (when one
// is not, only the run of that tool is left out, and said). The
// snapshot hashes .hg, .mvn, mcpolicy.d and mcpolicy.jsonnet whatever
// protect.Names says.
//
// The kubernetes scenarios (kubernetes_test.go, TestEscapeKubernetes)
// play the emitter's own Pod (kubernetes.Manifest with Options.HostPath:
// hostPath volumes of the scenario's folders) with `podman kube play`.
// The backend refuses a read-write project root, so the project is a
// policy beside a git checkout, shop/, read-write at /workspace with
// shop/src/gen at /gen: .git and .env.local are the checkout's volume
// again at a read-only subPath, /gen the volume at subPath src/gen, and
// the sandbox's root (snapshot, payload, the user's next git commands) is
// the checkout. podman 4 ignores subPath on hostPath volumes: every start
// first resolves the subPaths as the kubelet does (symlinks evaluated,
// the result inside the volume or the container is not started), and a
// refusal there is the model's, podman playing nothing. podman ignores
// NetworkPolicy: --network none stands for the deny-all policy. The
// scenarios: git takeover through the protected subPaths (k8s-git-
// takeover; weakened: the protected subPath mounts removed), the nested
// source or a protected entry swapped for a symlink to the home and the
// Pod started again (k8s-symlink-plant; weakened: /gen a hostPath of its
// source), the nested source swapped for a symlink to ../.git inside the
// volume (k8s-symlink-inside-volume: a known escape, skipped with its
// description when seen, failed under MCPOLICY_ESCAPE_STRICT=1), the
// home's credentials ENOENT (k8s-host-credentials; weakened: a hostPath
// of the home), and no network (k8s-network-none; weakened: podman's
// default network, as a CNI that does not enforce NetworkPolicy).
//
// The root-launch scenario (invoker_test.go) starts the entry of a
// default-user policy (1000:1000) as root: the server must be uid 1000 on
// the host, as docker's --user makes it (what it writes in its grant is
// 1000's; root's files there and /proc/sys refuse it), through the entry
// and, for bwrap and the engines, through mcpolicy run. Its weakened
// wiring is bwrap without the launcher, started by root: the plan's 1000
// is the host's root. The channels scenarios (channels_test.go) take what
// no confinement element models: a key in the user keyring of the
// server's host uid (user-keyring; weakened: podman's args without the
// launcher, under podman's own seccomp profile, which allows keyctl), an
// AF_VSOCK socket (vsock; weakened: the engines' args without the
// launcher), and /dev and /dev/shm as writable storage (dev-shm; weakened:
// bwrap's argv without --remount-ro /dev). landlock-alone-channels
// (landlock_alone_test.go) runs the Landlock entry with and without user
// namespaces: chmod and utimes of a file of the user's outside the grants,
// a TCP Fast Open send to a host listener, listen(2) on an unbound socket
// and a sock_diag socket must fail, the file and the listener unchanged;
// weakened: bare. cross-server-program (crossserver_test.go) is two
// servers in one policy: the attacker holds the project read-write
// (accepting rw-holds-other-server) and rewrites the victim's script in the
// git-ignored bin/; the victim's unchanged entry must be refused (exit 8,
// its token nowhere) on bwrap, docker, podman and Landlock, and without
// the accept mcpolicy build refuses naming both grants; on Landlock the
// attacker holds shared/, which holds the victim's script. Weakened: bwrap
// and Landlock with the victim's entry and artefact stripped of the
// program pin, which runs the attacker's script and prints the token.
//
// The by-hand scenarios (wrapper_test.go, issue #32) run self-rewrite,
// git-takeover, create-protected and symlink-swap through what a person
// starts rather than the client entry, as a developer starts it (uid
// 1000, pipes, their PATH with mcpolicy and mcpolicy-launch on it, the
// project as the working folder): `sh .mcpolicy/bwrap/attacker.sh` on
// bwrap, whose out-of-band widened spec must be refused (exit 8), and
// `mcpolicy run` on bwrap, docker and podman, each on a project of its
// own, and (self-rewrite, git-takeover, create-protected) `mcpolicy exec
// --policy DIR --server attacker` on Landlock's project (read-only, data/
// read-write), where rewriting the ruleset, the entry or the policy
// (mcpolicy exec compiles it at each start: the attacker's grants ~/.aws)
// must fail. mcpolicy run compiles the policy at each start: a swapped
// nested source is refused there as a policy error (exit 2), nothing run.
// Their weakened wiring is the wrapper build wrote before: bwrap with the
// spec's arguments and a plain --bind of the project, run by hand, where
// every step succeeds and the next run by hand runs the rewritten
// wrapper; for the Landlock leg, "bare": the payload run by the developer
// with no confinement, after which the host's git runs the planted
// commands and the next mcpolicy exec compiles the rewritten policy and
// reads ~/.aws/credentials.
//
// The bytecode-plant scenario (bytecode_test.go) is a Python project:
// main.py imports util (at the top), pkg.util2 and data.report, with
// __pycache__/ and .venv/ git-ignored, a venv made by the host's python3
// -m venv --without-pip and the top's __pycache__ from an earlier run, on
// bwrap, docker, podman and Landlock (project read-only, data/
// read-write). The payload plants .pyc files whose headers copy their
// sources' mtime and size and whose code touches a host marker (written by
// the test with the host's python3): over __pycache__/util.*.pyc and
// through a swapped __pycache__ (EROFS), a .pth in .venv's site-packages
// (EROFS), and in pkg/__pycache__ and data/__pycache__, which it creates
// below the top. Then the host runs python3 main.py and .venv/bin/python:
// the top's pyc and the .pth must not run. Below the top no mount can
// refuse a name that does not exist yet, and the host does run them: the
// scenario logs so, and asserts what holds there, lint's RW_CODE_CACHE
// error on the policy before launch (and on Landlock, once
// data/__pycache__ exists, a ruleset that binds it read-only). Its
// weakened wiring is bwrap without the launcher: every write succeeds and
// the host's python runs all four.
//
// The world-writable scenario (modes_test.go) spawns the entry under the
// client's umask 0 on bwrap, Landlock, docker and podman, in a read-write
// grant: chmod 777 of a folder, chmod o+w, fchmodat2 0666 (the helper)
// and a POSIX ACL whose other entry writes (the helper's setxattr of
// system.posix_acl_access, as setfacl -m o::rw) must fail with EPERM or
// ENOTSUP, and no folder or file the payload made there (umask 0 then
// mkdir; mkdir and a new file under the inherited umask) may be group- or
// world-writable on the host. Weakened: bwrap's argv without the launcher
// (no --seccomp) and the engines' args without it (their stock profiles,
// which predate fchmodat2), where the folder ends world-writable. The
// scratch-image-tmp scenario (same file) runs a policy with a scratch at
// /tmp in an image whose /tmp is 0755 root, on docker and podman: the
// server, uid 1000, must write its scratch; weakened: the engines' args
// without the launcher, where runc gives the tmpfs the image folder's mode
// and the write fails with EACCES.
//
// The drift scenarios (drift_test.go) are the user's own hand edits, not
// the server's: a --mount of the planted home added to a docker or podman
// entry's inline arguments must be refused at spawn (exit 8: the launcher
// compares them word for word with the pinned artefact) and reported by
// `mcpolicy check` (entry-hand-mount; weakened: the edited arguments run
// by the engine without the launcher, which reads the home); a bwrap
// artefact widened by hand with the entry's digest re-pinned must make
// `mcpolicy check` exit 8 (artefact-repinned; weakened: the re-pinned
// entry runs and reads the home); an entry for the policy's server in the
// user's ~/.claude.json replaced by a hand-written bwrap command must be
// reported by check at its position (entry-unmanaged; weakened: that entry
// runs and reads the home); a bwrap entry's --project-root edited to the
// home must be refused at spawn (exit 8: a pinned launch runs only at its
// artefact's own project), entry-hand-root; weakened: the same entry
// without its pin mounts the home where the project was and reads it.
//
// Under CI=true a missing bwrap, docker, podman or Landlock (or pty,
// session keyring, writable /run, user namespaces for host-throttle, or
// catatonit for podman kube play) fails
// the suite; elsewhere it skips with the reason, and -short skips the
// engines and kubernetes.
//
// The write report scenario (writereport_test.go, write-report) plants,
// in the server's read-write grant, a package's bytecode
// (pypkg/__pycache__/x.cpython-311.pyc), a .pth and an executable script,
// on bwrap, docker, podman and Landlock: once the entry has returned,
// `mcpolicy check` (the entry's HOME, so the same state folder) must exit 5
// naming each with its kind and the server, and `mcpolicy sessions
// --details` list each flagged. Its weakened wiring is "bare": the same
// planting with no launcher records no session, and check says nothing
// (exit 0).
//
// cross-server-noext (crossserver_test.go) is the same attack on a script
// known by no extension: the victim runs `/bin/sh` on tools/victim from
// a read-only mount of the project, the attacker holds tools/ read-write.
// Without the accept the build refuses the grant, naming the script;
// with it, the victim's entry pins the script, and its next launch after
// the rewrite is refused (exit 8) on bwrap, docker, podman and Landlock
// (there the attacker holds the project read-only, tools/ read-write);
// weakened: the entry without its pin runs the rewrite and prints the
// token, on bwrap and Landlock.
//
// cross-server-source (crossserver_test.go) rewrites a mount source:
// config/, mounted read-only at /cfg by two servers, lies in the
// attacker's read-write grant. The victim runs config/start.sh (sh
// /cfg/start.sh); the reader runs the command its config file names
// (sh -c 'exec $(cat /cfg/command)'; on Landlock, host paths, from its
// workdir /cfg). Without the accept the build refuses the grant, naming
// both servers; with it, the victim's entry pins start.sh and its next
// launch after the rewrite is refused (exit 8); a file a server reads
// is not pinned (the accepted degradation gives it away), so mcpolicy
// check, before the reader's next launch, must flag the attacker's write
// as other-server, naming the reader, on bwrap, docker, podman and
// Landlock. Weakened: the entries without their pins, on bwrap and
// Landlock, where both run the attacker's code.
//
// engineentry_test.go: podman-conf-umask runs the podman entry with
// CONTAINERS_CONF naming a containers.conf with umask "0000": the
// launcher passes --umask, so the server's mkdir, creat, mkfifo and mknod
// leave nothing other users may write in its grant (weakened: the
// engine's args without the launcher do). engine-hand-unprotect adds
// --unprotect .git by hand to a docker or podman entry: check, run first,
// reports the drift (UNPROTECT_ADDED) and the launch is refused (exit 8),
// the host unchanged (weakened: .git unprotected where the launcher reads
// it, a label in the re-pinned artefact and entry: the payload plants the
// hook and core.fsmonitor).
//
// seed-fixed-top (seed_test.go, issue #42) runs the seed's own policy,
// examples/seed's one file (the project read-write at /workspace, a 256m
// scratch, network none, uid 1000:1000), on bwrap, docker, podman and
// Landlock (the launcher's minimal root): the server appends to an
// existing top-level file and writes in an existing top-level folder
// (both must work), and creates .envrc, rewrites .mcp.json, plants
// .git/hooks/pre-commit and .vscode/tasks.json and renames src/ (each
// EROFS or EBUSY, the host unchanged); ~/.aws/credentials is ENOENT.
// landlock-protected-below (same file) gives data/, read-write on
// Landlock, a .git of its own: its config and hooks cannot be written nor
// the folder swapped, data/ can be. Their weakened wiring is the
// committed ruleset without its fixedTop (or protected) run by the
// launcher without --sha256, where every planting succeeds.
package escape
