package kubernetes_test

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

// pssVersion pins the Pod Security Standards version evaluated: the one of
// the k8s.io/pod-security-admission module in go.mod (v0.37.2).
var pssVersion = psapi.MajorMinorVersion(1, 37)

// hostPathReasons are what Pod Security "restricted" says of a hostPath
// volume: it is a grant of the node's files, which no admission level but
// "privileged" lets through. Manifests with hostPath volumes are checked to
// fail on this (restricted replaces baseline's "hostPath volumes" check) and nothing else; the same plans with claims must pass.
var hostPathReasons = []string{"restricted volume types"}

var (
	scheme  = newScheme()
	strict  = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	checker = newEvaluator()
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func newEvaluator() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err)
	}
	return e
}

// documents splits a multi-document YAML file.
func documents(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		// The header is comments only; the first separator starts a line.
		d = bytes.TrimPrefix(d, []byte("---\n"))
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// decodeStrict decodes every document with the API machinery's strict
// decoder: an unknown or duplicate field is an error, as is a kind the
// scheme does not know.
func decodeStrict(data []byte) ([]runtime.Object, error) {
	var objs []runtime.Object
	for i, d := range documents(data) {
		obj, _, err := strict.Decode(d, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// podTemplates are the Pod specs of the objects, by object.
func podTemplates(objs []runtime.Object) map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Pod:
			out["Pod/"+v.Name] = &corev1.PodTemplateSpec{ObjectMeta: v.ObjectMeta, Spec: v.Spec}
		case *appsv1.Deployment:
			out["Deployment/"+v.Name] = &v.Spec.Template
		}
	}
	return out
}

// violations evaluates a Pod spec with the upstream Pod Security
// Admission checks at level restricted, pinned version, and returns the
// forbidden reasons, each with its detail.
func violations(meta *metav1.ObjectMeta, spec *corev1.PodSpec) []string {
	var out []string
	for _, r := range checker.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: pssVersion}, meta, spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+" ("+r.ForbiddenDetail+")")
		}
	}
	sort.Strings(out)
	return out
}

// reasons drops the details.
func reasons(vs []string) []string {
	var out []string
	for _, v := range vs {
		r, _, _ := strings.Cut(v, " (")
		out = append(out, r)
	}
	return out
}

// validate holds the manifest to the real API types (sameAsAPI), decodes
// it strictly and evaluates each Pod template: a Pod with a hostPath
// volume must fail on the hostPath reason alone, any other on nothing.
// claimsOnly says no hostPath may be there at all.
func validate(t *testing.T, what string, data []byte, claimsOnly bool) []runtime.Object {
	t.Helper()
	sameAsAPI(t, what, data)
	objs, err := decodeStrict(data)
	if err != nil {
		t.Fatalf("%s: strict decoding: %v\n%s", what, err, data)
	}
	// Every Pod template: the server's, and for an allowlist the egress
	// proxy's, evaluated alike.
	tpls := podTemplates(objs)
	roles := map[string]int{}
	for _, tpl := range tpls {
		roles[tpl.Labels[kubernetes.LabelRole]]++
	}
	if len(tpls) != roles[kubernetes.RoleServer]+roles[kubernetes.RoleEgressProxy] || roles[kubernetes.RoleServer] != 1 || roles[kubernetes.RoleEgressProxy] > 1 {
		t.Fatalf("%s: Pod templates by role %v, want one server and at most one egress proxy", what, roles)
	}
	for name, tpl := range tpls {
		vs := violations(&tpl.ObjectMeta, &tpl.Spec)
		hostPath := slices.ContainsFunc(tpl.Spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil })
		if hostPath && claimsOnly {
			t.Errorf("%s: %s: a hostPath volume though every mount has a claim", what, name)
		}
		var want []string
		if hostPath {
			want = hostPathReasons
		}
		if !slices.Equal(reasons(vs), want) {
			t.Errorf("%s: %s: Pod Security restricted (%s) says %q, want %q", what, name, pssVersion, vs, want)
		}
	}
	return objs
}
