package kubernetes

import (
	"encoding/json"
	"fmt"
	"path"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// Credentials in a cluster (issue 41). The server's Pod and the
// egress-proxy Pod start apart, and the server must hold its placeholders
// and trust the session CA from its first instruction, so the proxy
// cannot draw them at its start as mcpolicy run's does: mcpolicy
// credentials draws them, once per run, and writes three objects, split
// by who may read them:
//
//   - Secret <server>-credentials: the values, the placeholders, the
//     session CA and its key. Mounted in the egress-proxy Pod alone.
//   - Secret <server>-credential-placeholders: the placeholders, read by
//     the server's Pod as its variables.
//   - ConfigMap <server>-session-ca: the session CA's certificate and the
//     bundle (it and the roots of the machine that drew it), mounted
//     read-only in the server's Pod where mcpolicy run binds them.
//
// The manifest names them and holds none of their data. The server's Pod
// references neither the first Secret nor a key of it: no volume, no
// variable, no projection (a runtime that mounts a Secret's every key,
// as podman 4 does, finds nothing there either).

// ProxyCredentialsDir is where the egress-proxy Pod mounts Secret
// CredentialsSecret.
const ProxyCredentialsDir = "/var/run/mcpolicy/credentials"

// Volume names, in the Pods that have them.
const (
	volCredentials = "credentials"
	volSessionCA   = "session-ca"
)

// CredentialsSecret is the Secret holding a server's credentials' values,
// their placeholders and the session CA with its key: the proxy's alone.
func CredentialsSecret(server string) string { return server + "-credentials" }

// PlaceholdersSecret is the Secret the server's Pod reads its
// placeholders from.
func PlaceholdersSecret(server string) string { return server + "-credential-placeholders" }

// SessionCAConfigMap is the ConfigMap holding the session CA's
// certificate and the trust bundle the server's Pod mounts.
func SessionCAConfigMap(server string) string { return server + "-session-ca" }

// proxyGrant is a grant as the egress-proxy command takes it: where the
// value comes from is not the Pod's to know (it is in the Secret).
type proxyGrant struct {
	Name string               `json:"name"`
	To   []string             `json:"to"`
	As   credential.Injection `json:"as"`
}

// credentialArgs are the egress-proxy flags of the plan's credentials.
func credentialArgs(p *compiler.Plan) []string {
	if len(p.Credentials) == 0 {
		return nil
	}
	var args []string
	for _, g := range p.Credentials {
		b, err := json.Marshal(proxyGrant{Name: g.Name, To: g.To, As: g.As})
		if err != nil {
			panic("internal error: a grant's JSON: " + err.Error())
		}
		args = append(args, "--credential", string(b))
	}
	return append(args, "--credentials-dir", ProxyCredentialsDir)
}

// proxyCredentialVolume is the egress-proxy Pod's volume of
// CredentialsSecret, readable by its group (fsGroup: the proxy's) alone,
// and its mount; ok is false without credentials.
func proxyCredentialVolume(p *compiler.Plan) (kube.Volume, kube.VolumeMount, bool) {
	if len(p.Credentials) == 0 {
		return kube.Volume{}, kube.VolumeMount{}, false
	}
	f, mode := false, int32(0o440)
	v := kube.Volume{Name: volCredentials, VolumeSource: kube.VolumeSource{Secret: &kube.SecretVolumeSource{
		SecretName: CredentialsSecret(p.Server), DefaultMode: &mode, Optional: &f}}}
	return v, kube.VolumeMount{Name: volCredentials, ReadOnly: true, MountPath: ProxyCredentialsDir}, true
}

// serverCredentials are what the server's Pod gets of its credentials:
// each placeholder under the grant's name, from PlaceholdersSecret; the
// trust variables; the session CA's ConfigMap, read-only at
// sandbox.Dir (where mcpolicy run binds the same files).
func serverCredentials(p *compiler.Plan) ([]kube.EnvVar, []kube.Volume, []kube.VolumeMount) {
	if len(p.Credentials) == 0 {
		return nil, nil, nil
	}
	f, mode := false, int32(0o444)
	var env []kube.EnvVar
	for _, g := range p.Credentials {
		env = append(env, kube.EnvVar{Name: g.Name, ValueFrom: &kube.EnvVarSource{SecretKeyRef: &kube.SecretKeySelector{
			LocalObjectReference: kube.LocalObjectReference{Name: PlaceholdersSecret(p.Server)}, Key: g.Name, Optional: &f}}})
	}
	for _, kv := range sandbox.TrustEnv() {
		env = append(env, kube.EnvVar{Name: kv[0], Value: kv[1]}) // paths, not secrets
	}
	items := []kube.KeyToPath{
		{Key: path.Base(sandbox.CABundle), Path: path.Base(sandbox.CABundle)},
		{Key: path.Base(sandbox.SessionCA), Path: path.Base(sandbox.SessionCA)},
	}
	v := kube.Volume{Name: volSessionCA, VolumeSource: kube.VolumeSource{ConfigMap: &kube.ConfigMapVolumeSource{
		LocalObjectReference: kube.LocalObjectReference{Name: SessionCAConfigMap(p.Server)}, Items: items, DefaultMode: &mode, Optional: &f}}}
	return env, []kube.Volume{v}, []kube.VolumeMount{{Name: volSessionCA, ReadOnly: true, MountPath: sandbox.Dir}}
}

// Drawn is what mcpolicy credentials read and drew for a server's
// credentials: each value and placeholder by grant name, the session CA
// (certificate, key) and the trust bundle.
type Drawn struct {
	Values, Placeholders map[string]string
	CACert, CAKey        []byte
	Bundle               []byte
}

// CredentialObjects are the Secrets and the ConfigMap that hold what d
// drew for the plan's credentials (see CredentialsSecret), for
// `kubectl apply -f -`. They hold the values: never a build artefact.
func CredentialObjects(p *compiler.Plan, o Options, d Drawn) ([]any, error) {
	if err := CheckCredentials(p, o); err != nil {
		return nil, err
	}
	labels := EgressProxyLabels(p.Server)
	proxy := map[string][]byte{
		credential.CACertFile: d.CACert,
		credential.CAKeyFile:  d.CAKey,
	}
	placeholders := map[string][]byte{}
	for _, g := range p.Credentials {
		v, ph := d.Values[g.Name], d.Placeholders[g.Name]
		if err := credential.CheckPair(v, ph); err != nil {
			return nil, fmt.Errorf("server %q: credential %s: %v", p.Server, g.Name, err)
		}
		if errs := kube.IsConfigMapKey(credential.PlaceholderFile(g.Name)); len(errs) > 0 {
			return nil, fmt.Errorf("server %q: credential %s: %v", p.Server, g.Name, errs)
		}
		proxy[g.Name] = []byte(v)
		proxy[credential.PlaceholderFile(g.Name)] = []byte(ph)
		placeholders[g.Name] = []byte(ph)
	}
	cm := map[string]string{
		path.Base(sandbox.CABundle):  string(d.Bundle),
		path.Base(sandbox.SessionCA): string(d.CACert),
	}
	if n := dataSize(cm); n > maxObjectData {
		return nil, fmt.Errorf("server %q: ConfigMap %s would hold %d bytes (the session CA and this machine's roots), more than the %d a cluster stores: draw it on a machine with a smaller CA bundle", p.Server, SessionCAConfigMap(p.Server), n, maxObjectData)
	}
	for _, data := range []map[string][]byte{proxy, placeholders} {
		if n := dataSize(data); n > maxObjectData {
			return nil, fmt.Errorf("server %q: a Secret would hold %d bytes of credentials, more than the %d a cluster stores", p.Server, n, maxObjectData)
		}
	}
	secret := func(name string, data map[string][]byte, labels map[string]string) *kube.Secret {
		return &kube.Secret{TypeMeta: kube.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta(p, o, name, labels), Type: kube.SecretTypeOpaque, Data: data}
	}
	return []any{
		secret(CredentialsSecret(p.Server), proxy, labels),
		secret(PlaceholdersSecret(p.Server), placeholders, serverSelector(p)),
		&kube.ConfigMap{TypeMeta: kube.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: meta(p, o, SessionCAConfigMap(p.Server), serverSelector(p)), Data: cm},
	}, nil
}

// maxObjectData is what the API server stores in a Secret's or a
// ConfigMap's data, keys and values together (1 MiB): a bundle past it
// was printed, and then refused by kubectl apply.
const maxObjectData = 1 << 20

func dataSize[V string | []byte](data map[string]V) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}

// CheckCredentials refuses what CredentialObjects would refuse before any
// value is read: a plan the backend cannot enforce, one without
// credentials, bad options.
func CheckCredentials(p *compiler.Plan, o Options) error {
	if err := check(p, o); err != nil {
		return err
	}
	if len(p.Credentials) == 0 {
		return fmt.Errorf("server %q has no credentials", p.Server)
	}
	return nil
}

// CredentialManifest renders CredentialObjects as one YAML file.
func CredentialManifest(p *compiler.Plan, o Options, d Drawn) ([]byte, error) {
	objs, err := CredentialObjects(p, o, d)
	if err != nil {
		return nil, err
	}
	b := []byte(fmt.Sprintf("# mcpolicy credentials %s: the credentials' values, placeholders and session CA (plan %s).\n"+
		"# Holds the values: apply it (kubectl apply -f -), never commit it. Secret %s is the egress-proxy Pod's alone.\n",
		p.Server, p.Hash, CredentialsSecret(p.Server)))
	for _, obj := range objs {
		y, err := render(obj)
		if err != nil {
			return nil, err
		}
		b = append(append(b, "---\n"...), y...)
	}
	return b, nil
}
