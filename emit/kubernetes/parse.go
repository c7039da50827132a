package kubernetes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// The reverse reader: a hand-written manifest (a Pod, or a workload whose
// Pod template it holds: Deployment, StatefulSet, DaemonSet, ReplicaSet,
// Job, CronJob) read back into targets (compiler/readback), one per
// container, like the docker reader reads `docker run` arguments. What
// the IR can say goes into the plan (image, user, hostPath mounts as
// grants of the node's files, the other volumes as grants of what their
// objects hold and the scratch (parse_volumes.go), env names, network as
// the file's NetworkPolicies say (parse_egress.go)); what it cannot, into
// flags, each at the position of the field that says it (or of the
// container, for a field left out).
// YAML is read as nodes (go.yaml.in/yaml/v3) for the positions.

// workloadKinds are the kinds whose Pod spec is at spec.template.spec.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true,
	"Job": true, "ReplicationController": true}

// LooksLikeManifest reports whether src is Kubernetes YAML: a document with
// apiVersion and a kind that holds a Pod spec.
func LooksLikeManifest(src []byte) bool {
	docs, err := documents(src)
	if err != nil {
		return false
	}
	for _, d := range docs {
		if _, _, ok := podSpecOf(d); ok {
			return true
		}
	}
	return false
}

func documents(src []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var out []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 && n.Content[0].Kind == yaml.MappingNode {
			out = append(out, n.Content[0])
		}
	}
}

// get is the value of key in a mapping node, nil when absent.
func get(m *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == k {
				next = m.Content[i+1]
			}
		}
		m = next
	}
	return m
}

func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func isTrue(n *yaml.Node) bool  { return n != nil && n.Kind == yaml.ScalarNode && n.Value == "true" }
func isFalse(n *yaml.Node) bool { return n != nil && n.Kind == yaml.ScalarNode && n.Value == "false" }

// podSpecOf finds a document's Pod spec, and the kind and name.
func podSpecOf(doc *yaml.Node) (spec *yaml.Node, what string, ok bool) {
	kind, name := str(get(doc, "kind")), str(get(doc, "metadata", "name"))
	if str(get(doc, "apiVersion")) == "" {
		return nil, "", false
	}
	switch {
	case kind == "Pod":
		spec = get(doc, "spec")
	case workloadKinds[kind]:
		spec = get(doc, "spec", "template", "spec")
	case kind == "CronJob":
		spec = get(doc, "spec", "jobTemplate", "spec", "template", "spec")
	}
	if spec == nil || spec.Kind != yaml.MappingNode {
		return nil, "", false
	}
	return spec, kind + "/" + name, true
}

// ParseManifest reads every Pod spec of a manifest file into targets,
// one per container (init containers included). secret says whether an
// env name=value holds a secret inline (the client reader's test, shared).
func ParseManifest(file string, src []byte, secret func(name, value string) bool) ([]*readback.Target, error) {
	docs, err := documents(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	pos := func(n *yaml.Node) position.Pos { return position.Pos{File: file, Line: n.Line, Col: n.Column} }
	var out []*readback.Target
	for _, doc := range docs {
		spec, what, ok := podSpecOf(doc)
		if !ok {
			continue
		}
		egress := egressOf(docs, doc, pos)
		containers := containerNodes(spec)
		for _, c := range containers {
			server := what
			if len(containers) > 1 {
				server += "/" + str(get(c, "name"))
			}
			r := newContainerReader(file, server, spec, c, pos)
			r.hostNamespaces()
			r.securityContext()
			r.volumes()
			r.env(secret)
			r.network(egress)
			r.t.Plan = r.p
			out = append(out, r.t)
		}
	}
	return out, nil
}

// containerNodes is a Pod spec's containers, the init ones first.
func containerNodes(spec *yaml.Node) []*yaml.Node {
	var containers []*yaml.Node
	for _, key := range []string{"initContainers", "containers"} {
		if seq := get(spec, key); seq != nil && seq.Kind == yaml.SequenceNode {
			containers = append(containers, seq.Content...)
		}
	}
	return containers
}

// containerReader reads one container of a Pod spec into a target: each
// step fills the plan with what the IR can say and flags the rest.
type containerReader struct {
	spec, c *yaml.Node
	pos     func(*yaml.Node) position.Pos
	t       *readback.Target
	p       *compiler.Plan
}

func newContainerReader(file, server string, spec, c *yaml.Node, pos func(*yaml.Node) position.Pos) *containerReader {
	t := &readback.Target{Server: server, File: file, Pos: pos(c), Origin: readback.FromClient, Launcher: Backend}
	if img := get(c, "image"); img != nil {
		t.ImagePos = pos(img)
	}
	p := &compiler.Plan{Server: server, Pos: pos(c), Image: str(get(c, "image")), Network: compiler.Network{Mode: "open"}}
	return &containerReader{spec: spec, c: c, pos: pos, t: t, p: p}
}

func (r *containerReader) flag(k readback.FlagKind, v string, n *yaml.Node) {
	r.t.Flags = append(r.t.Flags, readback.Flag{Kind: k, Value: v, Pos: r.pos(n)})
}

// at is where a field is flagged: itself, or the container where it is
// left out.
func (r *containerReader) at(n *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return r.c
}

// hostNamespaces flags the Pod's host namespaces.
func (r *containerReader) hostNamespaces() {
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if v := get(r.spec, f); isTrue(v) {
			r.flag(readback.FlagK8sHostNamespace, f, v)
		}
	}
}

// securityContext reads the container's securityContext into the
// subtractions and the user, flagging each one missing.
func (r *containerReader) securityContext() {
	csc := get(r.c, "securityContext")
	if v := get(csc, "privileged"); isTrue(v) {
		r.flag(readback.FlagK8sPrivileged, "", v)
	}
	drop, all := get(csc, "capabilities", "drop"), false
	if drop != nil {
		for _, d := range drop.Content {
			all = all || strings.EqualFold(d.Value, "ALL")
		}
	}
	if !all {
		r.flag(readback.FlagK8sCapabilities, "no capabilities.drop [ALL]: the runtime's default capabilities stay", r.at(drop))
	}
	if add := get(csc, "capabilities", "add"); add != nil {
		for _, a := range add.Content {
			r.flag(readback.FlagK8sCapabilities, "capabilities.add "+a.Value, a)
		}
	}
	if v := get(csc, "readOnlyRootFilesystem"); !isTrue(v) {
		r.flag(readback.FlagK8sWritableRoot, str(v), r.at(v))
	}
	if v := get(csc, "allowPrivilegeEscalation"); !isFalse(v) {
		r.flag(readback.FlagK8sEscalation, str(v), r.at(v))
	}
	r.p.Subtractions = compiler.Subtractions{ReadOnlyRoot: isTrue(get(csc, "readOnlyRootFilesystem")), DropAllCaps: all,
		NoNewPrivileges: isFalse(get(csc, "allowPrivilegeEscalation"))}
	r.user()
}

// user reads the uid and gid, and flags a user that may be root. The
// container's securityContext wins over the Pod's where it has the field.
func (r *containerReader) user() {
	psc, csc := get(r.spec, "securityContext"), get(r.c, "securityContext")
	field := func(key string) *yaml.Node {
		if v := get(csc, key); v != nil {
			return v
		}
		return get(psc, key)
	}
	uid, gid := -1, -1
	if n, err := strconv.Atoi(str(field("runAsUser"))); err == nil {
		uid = n
	}
	if n, err := strconv.Atoi(str(field("runAsGroup"))); err == nil {
		gid = n
	}
	r.p.User = compiler.User{UID: uid, GID: gid}
	switch nonRoot := field("runAsNonRoot"); {
	case uid == 0:
		r.flag(readback.FlagK8sRoot, "runAsUser 0", field("runAsUser"))
	case !isTrue(nonRoot):
		r.flag(readback.FlagK8sRoot, "", r.at(nonRoot))
	default:
		r.p.Subtractions.NonRootUser = true
	}
}

// volumes reads the container's mounts: hostPath ones are grants of the
// node's files; the others, what their objects hold (parse_volumes.go).
func (r *containerReader) volumes() {
	mounts := r.mountViews()
	flagged := map[string]bool{}
	for _, m := range mounts {
		hp := get(m.vol.node, "hostPath", "path")
		if hp == nil {
			continue
		}
		if !flagged[hp.Value] {
			r.flag(readback.FlagK8sHostPath, hp.Value, hp)
			flagged[hp.Value] = true
		}
		if slices.ContainsFunc(mounts, func(rw mountView) bool { return reshows(m, rw) }) {
			continue // a protected entry shown again read-only
		}
		src := path.Join(path.Clean(hp.Value), m.sub)
		mode := compiler.ReadOnly
		if !m.readOnly {
			mode = compiler.ReadWrite
			r.flag(readback.FlagK8sHostPathWrite, src+" -> "+m.target, m.node)
		}
		r.p.Mounts = append(r.p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: src},
			Target: m.target, Mode: mode, Pos: r.pos(hp)})
	}
	readVolumes(r.p, mounts, r.pos)
}

// mountViews are the container's volumeMounts, each with the Pod's volume
// it names.
func (r *containerReader) mountViews() []mountView {
	vols := map[string]*yaml.Node{}
	if seq := get(r.spec, "volumes"); seq != nil {
		for _, v := range seq.Content {
			vols[str(get(v, "name"))] = v
		}
	}
	var mounts []mountView
	if seq := get(r.c, "volumeMounts"); seq != nil {
		for _, m := range seq.Content {
			name := str(get(m, "name"))
			mv := mountView{node: m, volName: name, target: path.Clean(str(get(m, "mountPath"))),
				sub: path.Clean("/" + str(get(m, "subPath")))[1:], readOnly: isTrue(get(m, "readOnly"))}
			if v := vols[name]; v != nil {
				mv.vol = volumeOf(v)
			}
			mounts = append(mounts, mv)
		}
	}
	return mounts
}

// env reads the variables: a value written in the manifest, or a
// reference by name, each a grant of its name; secret flags a value that
// holds a secret inline.
func (r *containerReader) env(secret func(name, value string) bool) {
	seq := get(r.c, "env")
	if seq == nil {
		return
	}
	for _, e := range seq.Content {
		n := get(e, "name")
		if n == nil {
			continue
		}
		if v := get(e, "value"); v != nil && get(e, "valueFrom") == nil && proxyWiring(n.Value, v.Value) {
			continue // points the server at the egress proxy: configuration, no grant
		}
		r.p.Env = append(r.p.Env, compiler.EnvGrant{Name: n.Value, Pos: r.pos(n)})
		r.t.EnvPassed = append(r.t.EnvPassed, n.Value)
		if v := get(e, "value"); v != nil && secret(n.Value, v.Value) {
			r.flag(readback.FlagK8sSecretValue, n.Value, v)
		}
	}
}

// network is the host's, or what the file's NetworkPolicies let the Pod
// reach (egressOf): none, an allowlist through an egress proxy, or open
// (flagged with why).
func (r *containerReader) network(egress podEgress) {
	if hn := get(r.spec, "hostNetwork"); isTrue(hn) {
		r.p.Network.Mode, r.p.Network.Pos = "host", r.pos(hn)
		r.flag(readback.FlagNetwork, "host", hn)
	} else if egress.Mode == "none" {
		r.p.Network.Mode = "none"
		r.p.Subtractions.NoNetwork = true
	} else if egress.Mode == "allowlist" {
		r.p.Network = compiler.Network{Mode: "allowlist", Allow: egress.Allow, Pos: r.pos(egress.Node)}
		var entries []string
		for _, d := range egress.Allow {
			entries = append(entries, d.String())
		}
		r.flag(readback.FlagNetwork, "through the egress proxy "+egress.Via+": "+strings.Join(entries, ", "), egress.Node)
	} else {
		r.flag(readback.FlagNetwork, egress.Why, r.at(egress.Node))
	}
}
