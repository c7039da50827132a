package kube_test

import (
	"encoding/json"
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
)

// quantityCorpus: the edges of both formats (0, the 1024 switch to
// base-1024 suffixes, powers of 10 and 2 and their neighbours, exact and
// inexact multiples, the int64 limits), negated too.
func quantityCorpus() []int64 {
	vs := []int64{0, 1, 7, 99, 100, 999, 1000, 1001, 1023, 1024, 1025, 1536, 2000, 4096, 1500, 64 << 20, 512 << 20,
		1e9, 1_000_000_007, 3 << 40, 5e17, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 / 1024 * 1024}
	for p := int64(1); p > 0 && p <= math.MaxInt64/10; p *= 10 {
		vs = append(vs, p, p-1, p+1, 3*p, 15*p, 1024*p)
	}
	for k := range 63 {
		p := int64(1) << k
		vs = append(vs, p, p-1, p+1, 3*p, 5*p, 1000*p)
	}
	for _, v := range vs[:len(vs):len(vs)] {
		vs = append(vs, -v)
	}
	return append(vs, math.MinInt64, math.MinInt64+1)
}

// sameQuantity: kube's string for n is apimachinery's, as String() and
// as JSON.
func sameQuantity(t *testing.T, n int64) {
	t.Helper()
	for _, c := range []struct {
		format   string
		got      kube.Quantity
		apiValue *resource.Quantity
	}{
		{"BinarySI", kube.BinarySI(n), resource.NewQuantity(n, resource.BinarySI)},
		{"milli DecimalSI", kube.MilliDecimalSI(n), resource.NewMilliQuantity(n, resource.DecimalSI)},
	} {
		gj, err := json.Marshal(c.got)
		if err != nil {
			t.Fatal(err)
		}
		aj, err := json.Marshal(c.apiValue)
		if err != nil {
			t.Fatal(err)
		}
		if string(c.got) != c.apiValue.String() || string(gj) != string(aj) {
			t.Errorf("%d, %s: %s (JSON %s), apimachinery %s (JSON %s)", n, c.format, c.got, gj, c.apiValue.String(), aj)
		}
	}
}

func TestQuantityMatchesAPI(t *testing.T) {
	for _, n := range quantityCorpus() {
		sameQuantity(t, n)
	}
	// The emitter's mask size, written 4Ki.
	if got, want := kube.BinarySI(4<<10), resource.MustParse("4Ki"); string(got) != want.String() {
		t.Errorf("4Ki: %s, apimachinery %s", got, want.String())
	}
}

// FuzzQuantity: go test -fuzz FuzzQuantity ./emit/kubernetes/internal/kube/
func FuzzQuantity(f *testing.F) {
	for _, n := range quantityCorpus() {
		f.Add(n)
	}
	f.Fuzz(sameQuantity)
}
