package lint

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// Rules for hand-written Kubernetes manifests (lint --manifest FILE, or a
// YAML manifest given to --client), read by emit/kubernetes into targets
// whose flags are the fields a manifest widens its Pod with. A hostPath
// of a home folder or a credential store is a mount of the plan, and
// MOUNT_HOME, MOUNT_CREDENTIALS, MOUNT_ROOT and MOUNT_SHARED_TMP flag it as
// they do any other; NETWORK_OPEN a Pod no NetworkPolicy of the file confines.

// hardenedDeployment is what mcpolicy's kubernetes backend would emit, as
// a person writes it: the examples below each take one thing away.
const hardenedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: s}
spec:
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 1000}
      containers:
      - name: s
        image: img:1
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts:
        - {name: src, mountPath: /workspace}
      volumes:
      - {name: src, persistentVolumeClaim: {claimName: src}}
`

// manifest is the hardened Deployment with each old replaced by new (in
// pairs), as an example of kind "manifest".
func manifest(pairs ...string) Example {
	text := hardenedDeployment
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			panic("lint: manifest example: no " + pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	return Example{Kind: "manifest", Text: text}
}

const (
	claimVolume  = "persistentVolumeClaim: {claimName: src}"
	k8sEscalate  = "allowPrivilegeEscalation: false\n          "
	k8sNonRoot   = "runAsNonRoot: true, "
	srcMount     = "- {name: src, mountPath: /workspace}"
	k8sMounts    = "volumeMounts:\n"
	srcMountRO   = "- {name: src, mountPath: /workspace, readOnly: true}"
	nodeHostPath = "hostPath: {path: /srv/src, type: Directory}"
)

// k8sRules are the rules of Kubernetes manifests.
func k8sRules() []*Rule {
	return append(k8sSecurityRules(), k8sNodeRules()...)
}

// k8sSecurityRules flag a Pod's or container's security settings that
// give confinement back: privileged, host namespaces, capabilities, a
// writable root, privilege escalation, root.
func k8sSecurityRules() []*Rule {
	return []*Rule{
		{
			ID: "K8S_PRIVILEGED", Name: "k8s-privileged", Severity: Error,
			Purpose:     "A container of a Kubernetes manifest is privileged (securityContext.privileged: true).",
			Rationale:   "A privileged container has every capability and every device of the node, no seccomp filter and no AppArmor profile: it is root on the node one mount away.",
			Remediation: "Remove privileged: true; grant the one capability the server needs, if any (and drop ALL).",
			Bad:         manifest(k8sEscalate, k8sEscalate+"privileged: true\n          "),
			Good:        manifest(),
			check:       flagRule(readback.FlagK8sPrivileged, "privileged: true: every capability and device of the node, no seccomp"),
		},
		{
			ID: "K8S_HOST_NAMESPACE", Name: "k8s-host-namespace", Severity: Error,
			Purpose:     "A Pod of a Kubernetes manifest shares a namespace of the node (hostNetwork, hostPID or hostIPC: true).",
			Rationale:   "hostNetwork reaches every service on the node's loopback and bypasses NetworkPolicy; hostPID shows every process of the node (and their environments); hostIPC its shared memory.",
			Remediation: "Remove the field (false is the default).",
			Bad:         manifest("      securityContext: {", "      hostPID: true\n      securityContext: {"),
			Good:        manifest(),
			check:       flagRule(readback.FlagK8sHostNamespace, "%s: true: the Pod shares the node's namespace"),
		},
		{
			ID: "K8S_CAPABILITIES", Name: "k8s-capabilities", Severity: Warning,
			Purpose:     "A container of a Kubernetes manifest keeps the runtime's default capabilities (no capabilities.drop [ALL]) or adds one.",
			Rationale:   "The runtime's defaults (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_SETUID, CAP_NET_RAW...) are routes a server does not need; Pod Security \"restricted\" requires drop [ALL].",
			Remediation: "Set securityContext.capabilities.drop: [ALL], and add back only what the server cannot run without.",
			Bad:         manifest("drop: [ALL]", "drop: [NET_RAW]"),
			Good:        manifest(),
			check:       flagRule(readback.FlagK8sCapabilities, "%s"),
		},
		{
			ID: "K8S_WRITABLE_ROOT", Name: "k8s-writable-root", Severity: Warning,
			Purpose:     "A container of a Kubernetes manifest has a writable root filesystem (readOnlyRootFilesystem not true).",
			Rationale:   "A writable image lets the server change its own binaries and configuration for the next start, and hide files where no mount shows them.",
			Remediation: "Set securityContext.readOnlyRootFilesystem: true, with a bounded emptyDir (sizeLimit) where the server must write.",
			Bad:         manifest("readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false"),
			Good:        manifest(),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind == readback.FlagK8sWritableRoot {
						if f.Value == "" {
							report(f.Pos, "no readOnlyRootFilesystem: the root filesystem is writable")
						} else {
							report(f.Pos, "readOnlyRootFilesystem: %s: the root filesystem is writable", f.Value)
						}
					}
				}
			},
		},
		{
			ID: "K8S_PRIVILEGE_ESCALATION", Name: "k8s-privilege-escalation", Severity: Warning,
			Purpose:     "A container of a Kubernetes manifest may gain privileges (allowPrivilegeEscalation not false).",
			Rationale:   "Without no_new_privs a setuid binary in the image raises the server's privileges again; Kubernetes leaves it allowed unless the field says false.",
			Remediation: "Set securityContext.allowPrivilegeEscalation: false.",
			Bad:         manifest(k8sEscalate, ""),
			Good:        manifest(),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind == readback.FlagK8sEscalation {
						if f.Value == "" {
							report(f.Pos, "no allowPrivilegeEscalation: false: setuid binaries can raise privileges")
						} else {
							report(f.Pos, "allowPrivilegeEscalation: %s: setuid binaries can raise privileges", f.Value)
						}
					}
				}
			},
		},
		{
			ID: "K8S_RUN_AS_ROOT", Name: "k8s-run-as-root", Severity: Warning,
			Purpose:     "A container of a Kubernetes manifest may run as root (runAsNonRoot not true, or runAsUser 0).",
			Rationale:   "Without runAsNonRoot the image's USER decides, and many images say root; as root, file modes no longer apply inside the container and any escape starts from uid 0.",
			Remediation: "Set runAsNonRoot: true and a numeric runAsUser (and runAsGroup) in the Pod's or the container's securityContext.",
			Bad:         manifest(k8sNonRoot, ""),
			Good:        manifest(),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind == readback.FlagK8sRoot {
						if f.Value != "" {
							report(f.Pos, "%s: runs as root", f.Value)
						} else {
							report(f.Pos, "no runAsNonRoot: true: the image decides the user, root included")
						}
					}
				}
			},
		},
	}
}

// k8sNodeRules flag what of the node, and of the secrets, a Pod reaches:
// hostPath volumes, writable ones, a secret written as a value.
func k8sNodeRules() []*Rule {
	return []*Rule{
		{
			ID: "K8S_HOSTPATH", Name: "k8s-hostpath", Severity: Warning,
			Purpose:     "A Pod of a Kubernetes manifest mounts a hostPath volume: a grant of the node's files.",
			Rationale:   "A hostPath is whatever the node holds at that path, on whichever node the Pod lands; Pod Security \"baseline\" and \"restricted\" refuse it, so the Pod needs a privileged namespace, where nothing else is refused either.",
			Remediation: "Use a PersistentVolumeClaim (mcpolicy's kubernetes backend names one per mount); keep hostPath only deliberately, read-only, and waive this finding with the reason.",
			Bad:         manifest(claimVolume, nodeHostPath, srcMount, srcMountRO),
			Good:        manifest(),
			check:       flagRule(readback.FlagK8sHostPath, "hostPath %s: a grant of the node's files (Pod Security baseline and restricted refuse it)"),
		},
		{
			ID: "K8S_HOSTPATH_WRITABLE", Name: "k8s-hostpath-writable", Severity: Error,
			Purpose:     "A hostPath volume of a Kubernetes manifest is mounted read-write.",
			Rationale:   "A writable hostPath lets the server change the node's files: plant a symlink or a script that the next Pod, or the node itself, follows.",
			Remediation: "Mount it readOnly: true, or use a PersistentVolumeClaim.",
			Bad:         manifest(claimVolume, nodeHostPath),
			Good:        manifest(claimVolume, nodeHostPath, srcMount, srcMountRO),
			check:       flagRule(readback.FlagK8sHostPathWrite, "hostPath %s is writable: the server can change the node's files"),
		},
		{
			ID: "K8S_SECRET_VALUE", Name: "k8s-secret-value", Severity: Error,
			Purpose:     "An env variable of a Kubernetes manifest holds a secret as a literal value.",
			Rationale:   "A value in the manifest is in every copy of it: the repository, kubectl's last-applied annotation, every reader of the Pod object. A secretKeyRef names the secret, the cluster holds it.",
			Remediation: "Move the value into a Secret and reference it: valueFrom.secretKeyRef {name, key}.",
			Bad:         manifest(k8sMounts, "env:\n        - {name: GITHUB_TOKEN, value: ghp_0123456789abcdefghijklmnopqrstuvwxyzAB}\n        "+k8sMounts),
			Good:        manifest(k8sMounts, "env:\n        - name: GITHUB_TOKEN\n          valueFrom: {secretKeyRef: {name: s-env, key: GITHUB_TOKEN}}\n        "+k8sMounts),
			check:       flagRule(readback.FlagK8sSecretValue, "env %s: a secret written as a value in the manifest"),
		},
	}
}
