package compiler

import (
	"strings"
	"testing"
)

// "~/..." targets: kept as written in the plan, "~" a root of its own.
func TestHomeTargets(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", command: ["/bin/cat", "~/d/f", "--in=~/d"], workdir: "~/d",
	mounts: [{source: "~/d", target: "~/d"}, {source: ".", target: "/w"}],
	scratch: [{target: "/tmp", size: "1m"}, {target: "~/c", size: "1m"}]}`, "~/d/")
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	if !p.HomeTargets() || p.Mounts[1].Target != "~/d" || p.Workdir != "~/d" {
		t.Fatalf("plan: %+v", p)
	}
	if hp, ok := p.HostPathOf("~/d/f"); !ok || hp != (HostPath{Home, "d/f"}) {
		t.Errorf("HostPathOf(~/d/f) = %v, %v", hp, ok)
	}
	if _, ok := p.HostPathOf("/d/f"); ok {
		t.Errorf("an absolute path mapped to a ~/ target")
	}
	r := Placeholders{}
	for w, want := range map[string]string{"~/d/f": "${HOME}/d/f", "--in=~/d": "--in=${HOME}/d", "~x": "~x", "/w": "/w", "a=~/d": "a=~/d"} {
		if got := p.HomeWord(w, r); got != want {
			t.Errorf("HomeWord(%q) = %q, want %q", w, got, want)
		}
	}
	// Without "~/" targets no word changes: artefacts stay as they were.
	plans, _, err = compileSrc(t, `version: "v1"
servers: s: {image: "x", command: ["/bin/cat", "~/d/f"], mounts: [{source: "~/d", target: "/d"}]}`, "~/d/")
	if err != nil {
		t.Fatal(err)
	}
	if plans[0].HomeTargets() || plans[0].HomeWord("~/d/f", r) != "~/d/f" {
		t.Errorf("a plan without ~/ targets rewrote a word")
	}
}

func TestHomeTargetRefusals(t *testing.T) {
	cases := map[string]string{
		`mounts: [{source: "~/d", target: "~/d/"}]`:                                                                      `write "~/d"`,
		`mounts: [{source: "~/d", target: "~/a/../d"}]`:                                                                  `write "~/d"`,
		`mounts: [{source: "~/d", target: "~/d"}, {source: ".", target: "/home/u/d"}]`:                                   `target /home/u/d and the "~/..." targets may overlap`,
		`mounts: [{source: "~/d", target: "~/d"}], scratch: {target: "/root", size: "1m"}}`:                              `target /root and the "~/..." targets`,
		`workdir: "/home/x", mounts: [{source: "~/d", target: "~/d"}, {source: ".", target: "/home/x"}]`:                 `servers.s.workdir`,
		`mounts: [{source: "~/d", target: "~/d"}, {source: ".", target: "~/d"}]`:                                         "already used",
		`scratch: [{target: "~/d/t", size: "1m"}, {target: "/t", size: "1m"}], mounts: [{source: "~/d", target: "~/d"}]`: "scratch target ~/d/t and mount target ~/d are nested",
	}
	for body, want := range cases {
		_, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", `+strings.TrimSuffix(body, "}")+`}`, "~/d/")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\ngot %v\nwant an error containing %q", body, err, want)
		}
	}
	// An absolute target elsewhere is fine beside "~/..." ones.
	if _, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", mounts: [{source: "~/d", target: "~/d"}, {source: ".", target: "/home2/w"}]}`, "~/d/"); err != nil {
		t.Errorf("an absolute target outside /home and /root: %v", err)
	}
}
