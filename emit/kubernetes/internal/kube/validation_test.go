package kube_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
)

var validations = []struct {
	name      string
	kube, api func(string) []string
}{
	{"IsDNS1123Label", kube.IsDNS1123Label, validation.IsDNS1123Label},
	{"IsDNS1123Subdomain", kube.IsDNS1123Subdomain, validation.IsDNS1123Subdomain},
	{"IsConfigMapKey", kube.IsConfigMapKey, validation.IsConfigMapKey},
	{"IsQualifiedName", kube.IsQualifiedName, validation.IsQualifiedName},
	{"IsValidLabelValue", kube.IsValidLabelValue, validation.IsValidLabelValue},
}

// validationCorpus: lengths at and around each limit (63, 253), every
// kind of character at each end, dots, slashes, prefixes, case, unicode,
// invalid UTF-8, newlines (a regexp's $ is no line end here).
func validationCorpus() []string {
	vs := []string{"", "a", "A", "0", "-", ".", "..", "...", "_", "/", "//", "a/", "/a", "a/b", "a/b/c",
		"my-name", "123-abc", "-a", "a-", "a--b", "a.b", "a..b", ".a", "a.", "a_b", "_a", "a_", "Ab", "aB",
		"example.com/MyName", "Example.com/a", "example.com/", "example..com/a", "-example.com/a", "a.b/c.d",
		"k8s-app", "kube-dns", "kubernetes.io/metadata.name", "key.name", "KEY_NAME", "..a", ".a.", "a..",
		"a\n", "\na", "a b", "a\x00", "é", "aé", "ü.example", "a\xff", "\xff", "日本", "a:b", "a@b", "a*b", "a%b",
		"app.kubernetes.io/name", strings.Repeat("a", 253) + "/b", "a/" + strings.Repeat("b", 64),
	}
	for _, n := range []int{62, 63, 64, 252, 253, 254, 300} {
		vs = append(vs, strings.Repeat("a", n), strings.Repeat("a", n-1)+"-", strings.Repeat("A", n),
			strings.Repeat("a.", n/2)+"a", strings.Repeat("x", n)+"/y", "y/"+strings.Repeat("x", n),
			strings.Repeat("a", n-2)+"é")
	}
	return vs
}

func sameValidation(t *testing.T, s string) {
	t.Helper()
	for _, v := range validations {
		if got, want := v.kube(s), v.api(s); !slices.Equal(got, want) {
			t.Errorf("%s(%q):\n got %q\nwant %q", v.name, s, got, want)
		}
	}
}

func TestValidationMatchesAPI(t *testing.T) {
	for _, s := range validationCorpus() {
		sameValidation(t, s)
	}
}

// FuzzValidation: go test -fuzz FuzzValidation ./emit/kubernetes/internal/kube/
func FuzzValidation(f *testing.F) {
	for _, s := range validationCorpus() {
		f.Add(s)
	}
	f.Fuzz(sameValidation)
}
