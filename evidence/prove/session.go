package prove

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"golang.org/x/sys/unix"
)

// LabelProve marks every container prove starts, with the run's id as
// its value, so that the run removes them all however it ends.
const LabelProve = "org.mcpolicy.prove"

// LabelOwner names the process that started a container (the machine's
// boot, its pid namespace and pid): a run that died without its cleanup
// (SIGKILL, out of memory) leaves containers running a hostile server
// with no one attached, and the next run on the same machine removes
// those whose owner is gone.
const LabelOwner = "org.mcpolicy.prove.owner"

// namePrefix begins the name of every container prove starts: an image
// can set a container's labels, never its name.
const namePrefix = "mcpolicy-prove-"

// session is one run's record of what it made on this machine: the
// images it imported and the containers it started (by label). Its
// cleanup removes them, on success, on failure
// and on an interrupt (the caller cancels the context; Run returns
// through its defers).
type session struct {
	id         string
	keepImages bool
	images     map[string][]string // engine -> tags this run imported
	engines    map[string]bool     // engines this run started containers with
	n          int
	// interrupted: the run was cancelled, its engine clients killed.
	interrupted bool
}

func newSession(keepImages bool) *session {
	b := make([]byte, 4)
	rand.Read(b)
	return &session{id: fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b)), keepImages: keepImages,
		images: map[string][]string{}, engines: map[string]bool{}}
}

// labelled inserts a name and the run's label after "run": they change
// nothing the container may do, and let cleanup find it.
func (s *session) labelled(engine string, args []string) []string {
	if len(args) == 0 || args[0] != "run" {
		return args
	}
	if !s.engines[engine] {
		sweepOrphans(engine)
	}
	s.engines[engine] = true
	s.n++
	out := []string{"run", "--name", fmt.Sprintf("%s%s-%d", namePrefix, s.id, s.n), "--label", LabelProve + "=" + s.id, "--label", LabelOwner + "=" + owner()}
	return append(out, args[1:]...)
}

// owner is this process as LabelOwner spells it: the machine's boot id,
// pid namespace, pid ("<boot id>/pid:[4026531836]/1234"); "unknown",
// which no sweep takes for an owner, when /proc does not tell the first
// two.
func owner() string {
	boot, ns := bootID(), pidNamespace()
	if boot == "" || ns == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s/%s/%d", boot, ns, os.Getpid())
}

var (
	bootIDFormat = lazyre.New(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	pidNSFormat  = lazyre.New(`^pid:\[[0-9]{1,20}\]$`)
	// ownerFormat is owner's value: boot id, pid namespace, pid.
	ownerFormat = lazyre.New(`^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/(pid:\[[0-9]{1,20}\])/([1-9][0-9]{0,9})$`)
	// proveName is the name labelled gives a container (docker shows it
	// with a leading "/"): the session id (pid, random hex), a count.
	proveName = lazyre.New(`^/?` + namePrefix + `(([1-9][0-9]{0,9})-[0-9a-f]{8})-[1-9][0-9]{0,9}$`)
	// containerID and imageID are an engine's full ids, never a name.
	containerID = lazyre.New(`^[0-9a-f]{64}$`)
	imageID     = lazyre.New(`^(sha256:)?[0-9a-f]{64}$`)
)

// bootID is this boot of this machine's id, "" when it cannot be read: the
// initial pid namespace has the same id on every Linux host, and an
// engine (DOCKER_HOST) may be shared by several.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if id := strings.TrimSpace(string(b)); err == nil && bootIDFormat.MatchString(id) {
		return id
	}
	return ""
}

// pidNamespace names this process's pid namespace ("pid:[4026531836]"),
// "" when /proc does not say.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || !pidNSFormat.MatchString(ns) {
		return ""
	}
	return ns
}

// maxPid is the largest pid Linux gives (PID_MAX_LIMIT): a larger one is
// no process's, and "dead" only because it never lived.
const maxPid = 1 << 22

// sweepOrphans removes the containers earlier prove runs of this machine's
// boot and pid namespace started and did not remove because they died
// first: their owner's pid is gone. A pid reused since is taken for alive
// (the container stays until that process ends), never the other way
// round.
//
// Images and servers are hostile, and an image's labels are every one of
// its containers' labels: a candidate is a container prove made (its
// name, which an image cannot set, is labelled's, and its labels agree
// with the name), whose image does not itself carry prove's labels; the
// engine's answers are decoded as JSON, a label's value read only as the
// owner it must spell exactly, and a container removed by its full id.
func sweepOrphans(engine string) {
	boot, ns := bootID(), pidNamespace()
	if boot == "" || ns == "" {
		return // no owner this run could judge
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, engine, "ps", "-aq", "--no-trunc",
		"--filter", "label="+LabelProve, "--filter", "label="+LabelOwner, "--filter", "name="+namePrefix).Output()
	if err != nil {
		return
	}
	var dead []string
	for _, id := range strings.Fields(string(out)) {
		if !containerID.MatchString(id) {
			continue
		}
		c, ok := inspectContainer(ctx, engine, id)
		if !ok || c.ID != id {
			continue
		}
		pid, ok := orphanOwner(c, boot, ns)
		if !ok || imageLabelled(ctx, engine, c.Image) {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			dead = append(dead, id)
		}
	}
	if len(dead) > 0 {
		exec.CommandContext(ctx, engine, append([]string{"rm", "-f"}, dead...)...).Run()
	}
}

// inspected is what sweepOrphans reads of a container (docker's and
// podman's inspect agree on these).
type inspected struct {
	ID     string `json:"Id"`
	Name   string `json:"Name"`
	Image  string `json:"Image"`
	Config struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// inspectContainer is the engine's record of the container with full id.
func inspectContainer(ctx context.Context, engine, id string) (inspected, bool) {
	out, err := exec.CommandContext(ctx, engine, "inspect", "--type", "container", id).Output()
	var cs []inspected
	if err != nil || json.Unmarshal(out, &cs) != nil || len(cs) != 1 {
		return inspected{}, false
	}
	return cs[0], true
}

// orphanOwner is the pid of the prove run that made c, when c is prove's
// (its name labelled's, its session label the name's) and that run was of
// this boot and pid namespace.
func orphanOwner(c inspected, boot, ns string) (int, bool) {
	name := proveName.FindStringSubmatch(c.Name)
	if name == nil || c.Config.Labels[LabelProve] != name[1] {
		return 0, false
	}
	who := ownerFormat.FindStringSubmatch(c.Config.Labels[LabelOwner])
	// The session id begins with its run's pid: the owner must agree.
	if who == nil || who[1] != boot || who[2] != ns || who[3] != name[2] {
		return 0, false
	}
	pid, err := strconv.Atoi(who[3])
	if err != nil || pid <= 0 || pid > maxPid {
		return 0, false
	}
	return pid, true
}

// imageLabelled says whether image (an id) carries prove's labels itself,
// or cannot be read: then a container's labels may be the image's, not
// prove's, and the sweep leaves it.
func imageLabelled(ctx context.Context, engine, image string) bool {
	if !imageID.MatchString(image) {
		return true
	}
	out, err := exec.CommandContext(ctx, engine, "image", "inspect", image).Output()
	var is []struct {
		Labels map[string]string `json:"Labels"` // podman's
		Config struct {
			Labels map[string]string `json:"Labels"`
		} `json:"Config"`
	}
	if err != nil || json.Unmarshal(out, &is) != nil || len(is) != 1 {
		return true
	}
	for _, labels := range []map[string]string{is[0].Labels, is[0].Config.Labels} {
		for k := range labels {
			if k == LabelOwner || k == LabelProve {
				return true
			}
		}
	}
	return false
}

// interrupt marks the run cancelled, for cleanup.
func (s *session) interrupt() error {
	s.interrupted = true
	return ErrInterrupted
}

func (s *session) imported(engine, tag string) { s.images[engine] = append(s.images[engine], tag) }

// cleanup removes the run's containers, then (unless kept) the images it
// imported, then its folders. It must work after an interrupt, so it
// uses its own deadline, not the run's context.
func (s *session) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	engines := make([]string, 0, len(s.engines)+len(s.images))
	for e := range s.engines {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	// An engine client ended mid-call may leave its daemon creating the
	// container still: after an interrupt, look twice.
	passes := 1
	if s.interrupted {
		passes = 2
	}
	for pass := 0; pass < passes; pass++ {
		if pass > 0 {
			time.Sleep(time.Second)
		}
		for _, e := range engines {
			// Full ids, which no container's name can be taken for.
			out, err := exec.CommandContext(ctx, e, "ps", "-aq", "--no-trunc",
				"--filter", "label="+LabelProve+"="+s.id, "--filter", "name="+namePrefix+s.id+"-").Output()
			if ids := strings.Fields(string(out)); err == nil && len(ids) > 0 {
				exec.CommandContext(ctx, e, append([]string{"rm", "-f"}, ids...)...).Run()
			}
		}
	}
	if !s.keepImages {
		// Not forced: another prove run with the same probe may be using
		// the image this one imported, and forcing would untag it under
		// that run.
		for e, tags := range s.images {
			for _, t := range tags {
				removeImage(ctx, e, t)
			}
		}
	}
}

// removeImage removes tag, waiting a little while a container still
// holds it: an engine removes a --rm container after its client returns.
func removeImage(ctx context.Context, engine, tag string) {
	for try := 0; try < 10; try++ {
		out, err := exec.CommandContext(ctx, engine, "rmi", tag).CombinedOutput()
		msg := strings.ToLower(string(out))
		if err == nil || strings.Contains(msg, "no such image") || strings.Contains(msg, "image not known") ||
			!(strings.Contains(msg, "conflict") || strings.Contains(msg, "in use") || strings.Contains(msg, "being used")) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// The host side of a write: what a path is before and after an access, so
// that prove sees a change the plan denies whatever a server claims, and
// puts back what a probe or a server changed (each backend starts from
// the same files, and prove leaves the project as it found it). Every
// operation opens the folder holding the path without following a
// symbolic link anywhere on the way: a hostile server may have swapped a
// folder for a link to make prove remove or write something else.

// maxRestore is the largest file whose content prove keeps to put back.
const maxRestore = 4 << 20

type hostState struct {
	path    string
	exists  bool
	mode    os.FileMode
	size    int64
	mtime   int64
	ino     uint64
	uid     int
	gid     int
	content []byte // regular files up to maxRestore
	kept    bool   // content holds the whole file
}

func snapshot(path string) hostState {
	st := hostState{path: path}
	var s unix.Stat_t
	if unix.Lstat(path, &s) != nil {
		return st
	}
	st.exists, st.size, st.mtime, st.ino, st.uid, st.gid = true, s.Size, s.Mtim.Nano(), s.Ino, int(s.Uid), int(s.Gid)
	fi, err := os.Lstat(path)
	if err != nil {
		return st
	}
	st.mode = fi.Mode()
	if fi.Mode().IsRegular() && fi.Size() <= maxRestore {
		if b, err := readNoFollow(path); err == nil {
			st.content, st.kept = b, true
		}
	}
	return st
}

// change describes how b differs from a, "" when it does not.
func change(a, b hostState) string {
	switch {
	case !a.exists && !b.exists:
		return ""
	case !a.exists:
		return "created " + b.path
	case !b.exists:
		return "removed " + a.path
	case a.mode.Type() != b.mode.Type() || a.ino != b.ino:
		return "replaced " + a.path
	case a.mode.IsRegular() && (a.size != b.size || a.mtime != b.mtime || (a.kept && b.kept && !bytes.Equal(a.content, b.content))):
		return "changed " + a.path
	case a.mode.IsDir() && a.mtime != b.mtime:
		return "changed the entries of " + a.path
	case a.mode != b.mode || a.uid != b.uid || a.gid != b.gid:
		return "changed the mode or owner of " + a.path
	}
	return ""
}

type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("too large")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// removeNew removes path (a whole tree, links not followed) in a folder
// reached without a symbolic link.
func removeNew(path string) error {
	fd, base, err := openParent(path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// The descriptor's own /proc entry names the verified folder; RemoveAll
	// then opens nothing below it through a link.
	return os.RemoveAll(fmt.Sprintf("/proc/self/fd/%d/%s", fd, base))
}

// putBack writes a's content back at its path, in place of whatever is
// there now.
func putBack(a hostState) error {
	if !a.kept {
		return fmt.Errorf("%s: its content was not kept (not a regular file, or larger than %d bytes)", a.path, maxRestore)
	}
	fd, base, err := openParent(a.path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tmp := ".mcpolicy-prove-restore-" + base
	f, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(a.mode.Perm()))
	if err != nil {
		return fmt.Errorf("%s: %w", a.path, err)
	}
	file := os.NewFile(uintptr(f), tmp)
	_, werr := file.Write(a.content)
	unix.Fchmod(f, uint32(a.mode.Perm()))
	unix.Fchown(f, a.uid, a.gid)
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		var s unix.Stat_t
		if unix.Fstatat(fd, base, &s, unix.AT_SYMLINK_NOFOLLOW) == nil && s.Mode&unix.S_IFMT == unix.S_IFDIR {
			werr = os.RemoveAll(fmt.Sprintf("/proc/self/fd/%d/%s", fd, base))
		}
	}
	if werr == nil {
		werr = unix.Renameat(fd, tmp, fd, base)
	}
	if werr != nil {
		unix.Unlinkat(fd, tmp, 0)
		return fmt.Errorf("%s: %w", a.path, werr)
	}
	return nil
}

// restore puts the host back as the snapshots before found it, for each
// path that changed, and says what it did and what it could not.
func restore(before []hostState) (done, failed []string) {
	var gone, created []hostState
	for _, a := range before {
		b := snapshot(a.path)
		if change(a, b) == "" {
			continue
		}
		switch {
		case !a.exists:
			created = append(created, b)
		case !b.exists && a.mode.IsDir():
			gone = append(gone, a)
		default:
			if err := putBack(a); err != nil {
				failed = append(failed, err.Error())
			} else {
				done = append(done, "put back "+a.path)
			}
		}
	}
	// A folder moved: the one folder gone and the one created swap back.
	if len(gone) == 1 && len(created) == 1 && created[0].mode.IsDir() {
		if err := moveBack(created[0].path, gone[0].path); err == nil {
			done = append(done, "moved "+created[0].path+" back to "+gone[0].path)
			gone, created = nil, nil
		}
	}
	for _, g := range gone {
		failed = append(failed, g.path+": a folder removed; prove does not keep folders' contents")
	}
	for _, c := range created {
		if err := removeNew(c.path); err != nil {
			failed = append(failed, err.Error())
		} else {
			done = append(done, "removed "+c.path)
		}
	}
	return done, failed
}
