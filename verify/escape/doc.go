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
// Under CI=true a missing bwrap, docker, podman or Landlock (or pty,
// session keyring, writable /run) fails the suite; elsewhere it skips with
// the reason, and -short skips the engines.
package escape
