package prove

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// TestSweepOrphans: a prove run killed before its cleanup (SIGKILL, out of
// memory: a hostile server can cause the second) leaves its containers,
// the server running in them with no one attached. The next run that
// uses the engine removes the containers whose owner is gone, and only
// those: not a live run's, not one of another pid namespace or machine,
// and nothing an image's labels or a container's name can point it at.
func TestSweepOrphans(t *testing.T) {
	testbin.SkipShort(t, "runs docker and podman")
	for _, engine := range []string{"docker", "podman"} {
		t.Run(engine, func(t *testing.T) {
			b, err := registry.Lookup(engine)
			if err != nil {
				t.Fatal(err)
			}
			if why := testenv.Unavailable(b.Runtime()); why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatal(why)
				}
				t.Skip(why)
			}
			if bootID() == "" || pidNamespace() == "" {
				t.Skip("no boot id or pid namespace in /proc: the sweep judges no owner")
			}
			tag := "mcpolicy-sweep-test-" + randHex(t)
			empty := tag + ":empty"
			imp := exec.Command(engine, "import", "-", empty)
			imp.Stdin = strings.NewReader(string(make([]byte, 1024))) // an empty tar: two zero blocks
			if out, err := imp.CombinedOutput(); err != nil {
				t.Fatalf("%s import: %v: %s", engine, err, out)
			}
			t.Cleanup(func() { exec.Command(engine, "rmi", "-f", empty).Run() })
			create := func(name, image string, labels ...string) string {
				t.Helper()
				args := []string{"create", "--name", name}
				for _, l := range labels {
					args = append(args, "--label", l)
				}
				out, err := exec.Command(engine, append(append(args, image), "/none")...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s create %s: %v: %s", engine, name, err, out)
				}
				id := strings.TrimSpace(string(out))
				t.Cleanup(func() { exec.Command(engine, "rm", "-f", id).Run() })
				return id
			}
			// labelledImage is an image whose author set labels: committed
			// from a container, which keeps the labels' bytes exactly
			// (a Dockerfile's LABEL cannot hold a newline).
			labelledImage := func(suffix string, labels ...string) string {
				t.Helper()
				image := tag + ":" + suffix
				id := create(tag+"-base-"+suffix, empty, labels...)
				if out, err := exec.Command(engine, "commit", id, image).CombinedOutput(); err != nil {
					t.Fatalf("%s commit: %v: %s", engine, err, out)
				}
				t.Cleanup(func() { exec.Command(engine, "rmi", "-f", image).Run() })
				exec.Command(engine, "rm", "-f", id).Run()
				return image
			}
			dead, live := deadPid(t), os.Getpid()
			// ownerOf is LabelOwner's value for pid on this machine.
			ownerOf := func(pid int) string {
				return strings.TrimSuffix(owner(), "/"+strconv.Itoa(live)) + "/" + strconv.Itoa(pid)
			}
			// proveName is what labelled names a container of a run of pid;
			// sid, its session id.
			proveName := func(pid int) (name, sid string) {
				sid = fmt.Sprintf("%d-%s", pid, randHex(t))
				return fmt.Sprintf("mcpolicy-prove-%s-1", sid), sid
			}
			victim := tag + "-victim" // the user's container: no label at all
			injected := "x\n" + victim + " " + ownerOf(dead)
			ownerImage := labelledImage("owner", LabelOwner+"="+ownerOf(dead))
			injectImage := labelledImage("inject", LabelOwner+"="+injected)
			type want struct {
				id      string
				removed bool
			}
			cases := map[string]want{}
			prove := func(what string, pid int, image string, removed bool, ownerLabel string) {
				name, sid := proveName(pid)
				cases[what] = want{create(name, image, LabelProve+"="+sid, LabelOwner+"="+ownerLabel), removed}
			}
			prove("orphan: its owner is dead", dead, empty, true, ownerOf(dead))
			prove("a live run's", live, empty, false, ownerOf(live))
			prove("another pid namespace's", dead, empty, false, strings.Replace(ownerOf(dead), pidNamespace(), "pid:[1]", 1))
			prove("another machine's (boot id)", dead, empty, false, "00000000-0000-4000-8000-000000000000/"+pidNamespace()+"/"+strconv.Itoa(dead))
			prove("prove's name and labels, but from an image that sets the owner label", dead, ownerImage, false, ownerOf(dead))
			prove("prove's name, its owner label injecting a line", dead, empty, false, injected)
			cases["the user's container of an image that sets the owner label"] = want{create(tag+"-usersdb", ownerImage), false}
			cases["a container of an image whose owner label injects a line"] = want{create(tag+"-carrier", injectImage), false}
			cases["the container the injected line names"] = want{create(victim, empty), false}
			{
				_, sid := proveName(dead)
				cases["prove's labels, not prove's name"] = want{create(tag+"-other", empty, LabelProve+"="+sid, LabelOwner+"="+ownerOf(dead)), false}
				cases["prove's labels, a name that only contains prove's"] = want{create("x"+fmt.Sprintf("mcpolicy-prove-%s-1", sid), empty, LabelProve+"="+sid, LabelOwner+"="+ownerOf(dead)), false}
				other, _ := proveName(dead)
				cases["prove's name, another session's label"] = want{create(other, empty, LabelProve+"="+sid, LabelOwner+"="+ownerOf(dead)), false}
				name, sid := proveName(live)
				cases["a live run's session, a dead owner"] = want{create(name, empty, LabelProve+"="+sid, LabelOwner+"="+ownerOf(dead)), false}
			}
			sweepOrphans(engine)
			for what, w := range cases {
				err := exec.Command(engine, "inspect", "--type", "container", w.id).Run()
				if gone := err != nil; gone != w.removed {
					t.Errorf("%s: removed %v, want %v", what, gone, w.removed)
				}
			}
		})
	}
}

// TestLabelledSweepable: the name and labels labelled gives a container
// are what the sweep takes for prove's, with this run for its owner
// (docker shows a name with a leading "/", podman without).
func TestLabelledSweepable(t *testing.T) {
	if bootID() == "" || pidNamespace() == "" {
		t.Skip("no boot id or pid namespace in /proc: the sweep judges no owner")
	}
	s := newSession(false)
	s.engines["docker"] = true // no sweep
	args := s.labelled("docker", []string{"run", "image"})
	var c inspected
	c.Config.Labels = map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--name":
			c.Name = args[i+1]
		case "--label":
			k, v, _ := strings.Cut(args[i+1], "=")
			c.Config.Labels[k] = v
		}
	}
	for _, name := range []string{c.Name, "/" + c.Name} {
		c := c
		c.Name = name
		if pid, ok := orphanOwner(c, bootID(), pidNamespace()); !ok || pid != os.Getpid() {
			t.Errorf("%q %v: owner %d %v, want %d", name, c.Config.Labels, pid, ok, os.Getpid())
		}
	}
}

func randHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
