package kubernetes

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Reading a container's volume mounts back into grants, as the policy
// counts them: a hostPath is a mount of the node's files (read by
// ParseManifest, which flags it); a writable emptyDir is the scratch (a
// read-only one is an empty mask, no grant); any other volume (a
// PersistentVolumeClaim, a Secret, a ConfigMap...) is a mount of what that
// object holds, its source written ${persistentVolumeClaim}/NAME, read-only
// where the mount or the claim says so. A read-only mount that shows again,
// at the same place, files a read-write mount of the same volume shows
// (the protected entries the backend re-binds) takes away; it is no grant.

// volumeRef is a volume's kind (its source's key: persistentVolumeClaim,
// secret...) and the object it names.
type volumeRef struct {
	kind, object string
	readOnly     bool       // the source says readOnly (a claim's)
	node         *yaml.Node // the volume
}

func volumeOf(v *yaml.Node) volumeRef {
	ref := volumeRef{node: v}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if k := v.Content[i].Value; k != "name" {
			ref.kind = k
			src := v.Content[i+1]
			for _, key := range []string{"claimName", "secretName", "name"} {
				if s := str(get(src, key)); s != "" {
					ref.object = s
					break
				}
			}
			ref.readOnly = isTrue(get(src, "readOnly"))
		}
	}
	if ref.object == "" {
		ref.object = str(get(v, "name"))
	}
	return ref
}

// mountView is one volume mount of a container.
type mountView struct {
	node        *yaml.Node
	vol         volumeRef
	volName     string
	target, sub string
	readOnly    bool
}

// reshows reports whether ro shows again, at the same place, what rw (a
// read-write mount of the same volume) shows: a subtraction.
func reshows(ro, rw mountView) bool {
	if !ro.readOnly || rw.readOnly || ro.volName != rw.volName || rw.target == ro.target {
		return false
	}
	rel, ok := strings.CutPrefix(ro.target, strings.TrimSuffix(rw.target, "/")+"/")
	return ok && path.Join(rw.sub, rel) == ro.sub
}

// readVolumes adds the container's non-hostPath mounts to the plan.
func readVolumes(p *compiler.Plan, mounts []mountView, pos func(*yaml.Node) position.Pos) {
	for _, m := range mounts {
		switch m.vol.kind {
		case "hostPath", "":
			continue
		case "emptyDir":
			if m.readOnly {
				continue
			}
			if p.Scratch == nil {
				size := quantityBytes(str(get(m.vol.node, "emptyDir", "sizeLimit")))
				p.Scratch = &compiler.Scratch{Target: m.target, SizeBytes: size, Pos: pos(m.node)}
				continue
			}
		}
		if slices.ContainsFunc(mounts, func(rw mountView) bool { return reshows(m, rw) }) {
			continue
		}
		mode := compiler.ReadWrite
		if m.readOnly || m.vol.readOnly {
			mode = compiler.ReadOnly
		}
		src := compiler.HostPath{Base: compiler.Base(m.vol.kind), Rel: path.Join(m.vol.object, m.sub)}
		p.Mounts = append(p.Mounts, compiler.Mount{Source: src, Target: m.target, Mode: mode, Pos: pos(m.node)})
	}
}

// quantityBytes reads a Kubernetes quantity of bytes (256Mi, 1G, 4096),
// 0 when it is none it knows.
func quantityBytes(q string) int64 {
	mult := map[string]float64{"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
	n := strings.TrimRight(q, "kMGTPEi")
	m, ok := mult[q[len(n):]]
	f, err := strconv.ParseFloat(n, 64)
	if !ok || err != nil || f < 0 || f*m >= 1<<63 {
		return 0
	}
	return int64(f * m)
}
