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
		var containers []*yaml.Node
		for _, key := range []string{"initContainers", "containers"} {
			if seq := get(spec, key); seq != nil && seq.Kind == yaml.SequenceNode {
				containers = append(containers, seq.Content...)
			}
		}
		for _, c := range containers {
			name := str(get(c, "name"))
			server := what
			if len(containers) > 1 {
				server += "/" + name
			}
			t := &readback.Target{Server: server, File: file, Pos: pos(c), Origin: readback.FromClient, Launcher: Backend}
			flag := func(k readback.FlagKind, v string, n *yaml.Node) {
				t.Flags = append(t.Flags, readback.Flag{Kind: k, Value: v, Pos: pos(n)})
			}
			p := &compiler.Plan{Server: server, Pos: pos(c), Image: str(get(c, "image")), Network: compiler.Network{Mode: "open"}}
			if img := get(c, "image"); img != nil {
				t.ImagePos = pos(img)
			}
			psc, csc := get(spec, "securityContext"), get(c, "securityContext")

			// Host namespaces: the Pod's.
			for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
				if v := get(spec, f); isTrue(v) {
					flag(readback.FlagK8sHostNamespace, f, v)
				}
			}
			// The container's securityContext, the Pod's where it has the field.
			field := func(key string) *yaml.Node {
				if v := get(csc, key); v != nil {
					return v
				}
				return get(psc, key)
			}
			at := func(n *yaml.Node) *yaml.Node { // a field left out: the container
				if n != nil {
					return n
				}
				return c
			}
			if v := get(csc, "privileged"); isTrue(v) {
				flag(readback.FlagK8sPrivileged, "", v)
			}
			drop, all := get(csc, "capabilities", "drop"), false
			if drop != nil {
				for _, d := range drop.Content {
					all = all || strings.EqualFold(d.Value, "ALL")
				}
			}
			if !all {
				flag(readback.FlagK8sCapabilities, "no capabilities.drop [ALL]: the runtime's default capabilities stay", at(drop))
			}
			if add := get(csc, "capabilities", "add"); add != nil {
				for _, a := range add.Content {
					flag(readback.FlagK8sCapabilities, "capabilities.add "+a.Value, a)
				}
			}
			if v := get(csc, "readOnlyRootFilesystem"); !isTrue(v) {
				flag(readback.FlagK8sWritableRoot, str(v), at(v))
			}
			if v := get(csc, "allowPrivilegeEscalation"); !isFalse(v) {
				flag(readback.FlagK8sEscalation, str(v), at(v))
			}
			p.Subtractions = compiler.Subtractions{ReadOnlyRoot: isTrue(get(csc, "readOnlyRootFilesystem")), DropAllCaps: all,
				NoNewPrivileges: isFalse(get(csc, "allowPrivilegeEscalation"))}
			uid, gid := -1, -1
			if n, err := strconv.Atoi(str(field("runAsUser"))); err == nil {
				uid = n
			}
			if n, err := strconv.Atoi(str(field("runAsGroup"))); err == nil {
				gid = n
			}
			p.User = compiler.User{UID: uid, GID: gid}
			switch nonRoot := field("runAsNonRoot"); {
			case uid == 0:
				flag(readback.FlagK8sRoot, "runAsUser 0", field("runAsUser"))
			case !isTrue(nonRoot):
				flag(readback.FlagK8sRoot, "", at(nonRoot))
			default:
				p.Subtractions.NonRootUser = true
			}

			// Volumes: hostPath ones are grants of the node's files; the
			// others, what their objects hold (parse_volumes.go).
			vols := map[string]*yaml.Node{}
			if seq := get(spec, "volumes"); seq != nil {
				for _, v := range seq.Content {
					vols[str(get(v, "name"))] = v
				}
			}
			var mounts []mountView
			if seq := get(c, "volumeMounts"); seq != nil {
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
			flagged := map[string]bool{}
			for _, m := range mounts {
				hp := get(m.vol.node, "hostPath", "path")
				if hp == nil {
					continue
				}
				if !flagged[hp.Value] {
					flag(readback.FlagK8sHostPath, hp.Value, hp)
					flagged[hp.Value] = true
				}
				if slices.ContainsFunc(mounts, func(rw mountView) bool { return reshows(m, rw) }) {
					continue // a protected entry shown again read-only
				}
				src := path.Join(path.Clean(hp.Value), m.sub)
				mode := compiler.ReadOnly
				if !m.readOnly {
					mode = compiler.ReadWrite
					flag(readback.FlagK8sHostPathWrite, src+" -> "+m.target, m.node)
				}
				p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: src},
					Target: m.target, Mode: mode, Pos: pos(hp)})
			}
			readVolumes(p, mounts, pos)

			// Env: a value written in the manifest, or a reference by name.
			if seq := get(c, "env"); seq != nil {
				for _, e := range seq.Content {
					n := get(e, "name")
					if n == nil {
						continue
					}
					if v := get(e, "value"); v != nil && get(e, "valueFrom") == nil && proxyWiring(n.Value, v.Value) {
						continue // points the server at the egress proxy: configuration, no grant
					}
					p.Env = append(p.Env, compiler.EnvGrant{Name: n.Value, Pos: pos(n)})
					t.EnvPassed = append(t.EnvPassed, n.Value)
					if v := get(e, "value"); v != nil && secret(n.Value, v.Value) {
						flag(readback.FlagK8sSecretValue, n.Value, v)
					}
				}
			}

			if hn := get(spec, "hostNetwork"); isTrue(hn) {
				p.Network.Mode, p.Network.Pos = "host", pos(hn)
				flag(readback.FlagNetwork, "host", hn)
			} else if egress.Mode == "none" {
				p.Network.Mode = "none"
				p.Subtractions.NoNetwork = true
			} else if egress.Mode == "allowlist" {
				p.Network = compiler.Network{Mode: "allowlist", Allow: egress.Allow, Pos: pos(egress.Node)}
				var entries []string
				for _, d := range egress.Allow {
					entries = append(entries, d.String())
				}
				flag(readback.FlagNetwork, "through the egress proxy "+egress.Via+": "+strings.Join(entries, ", "), egress.Node)
			} else {
				at := c
				if egress.Node != nil {
					at = egress.Node
				}
				flag(readback.FlagNetwork, egress.Why, at)
			}
			t.Plan = p
			out = append(out, t)
		}
	}
	return out, nil
}
