package kube_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
)

// TestTypesMatchAPI walks each projected object and its k8s.io/api type
// side by side: every field of the projection must be a field of the
// API's type of the same name, JSON name and omit rule, embedding,
// pointer-ness, kind and type name, down to the leaves. Quantity and
// IntOrString stand for resource.Quantity and intstr.IntOrString (their
// formats are checked against apimachinery in quantity_test.go and by the
// emitter's round trips).
func TestTypesMatchAPI(t *testing.T) {
	for _, c := range []struct{ proj, api any }{
		{kube.Pod{}, corev1.Pod{}},
		{kube.Deployment{}, appsv1.Deployment{}},
		{kube.NetworkPolicy{}, networkingv1.NetworkPolicy{}},
		{kube.Service{}, corev1.Service{}},
		{kube.Secret{}, corev1.Secret{}},
		{kube.ConfigMap{}, corev1.ConfigMap{}},
	} {
		p, a := reflect.TypeOf(c.proj), reflect.TypeOf(c.api)
		for _, e := range compareTypes(p.Name(), p, a) {
			t.Error(e)
		}
	}
}

var (
	quantity    = reflect.TypeFor[kube.Quantity]()
	intOrString = reflect.TypeFor[kube.IntOrString]()
)

func compareTypes(path string, p, a reflect.Type) []string {
	switch p {
	case quantity:
		return want(path, a == reflect.TypeFor[resource.Quantity](), "a Quantity for %v", a)
	case intOrString:
		return want(path, a == reflect.TypeFor[intstr.IntOrString](), "an IntOrString for %v", a)
	}
	if p.Kind() != a.Kind() {
		return want(path, false, "%v for the API's %v", p, a)
	}
	if p.Name() != a.Name() {
		return want(path, false, "type %s, the API's %s", p.Name(), a.Name())
	}
	switch p.Kind() {
	case reflect.Pointer, reflect.Slice:
		return compareTypes(path+"[]", p.Elem(), a.Elem())
	case reflect.Map:
		return append(compareTypes(path+"{key}", p.Key(), a.Key()), compareTypes(path+"{}", p.Elem(), a.Elem())...)
	case reflect.Struct:
		var errs []string
		for i := range p.NumField() {
			pf := p.Field(i)
			af, ok := directField(a, pf.Name)
			fpath := path + "." + pf.Name
			if !ok {
				errs = append(errs, fpath+": the API has no such field")
				continue
			}
			if pf.Anonymous != af.Anonymous {
				errs = append(errs, fpath+": embedded in one, not the other")
			}
			if pt, at := jsonTag(pf), jsonTag(af); pt != at {
				errs = append(errs, fpath+": json "+pt+", the API's "+at)
			}
			errs = append(errs, compareTypes(fpath, pf.Type, af.Type)...)
		}
		return errs
	}
	return nil
}

func want(path string, ok bool, format string, args ...any) []string {
	if ok {
		return nil
	}
	return []string{path + ": " + fmt.Sprintf(format, args...)}
}

// directField is a's own field of that name (not one promoted from an
// embedded struct).
func directField(a reflect.Type, name string) (reflect.StructField, bool) {
	for i := range a.NumField() {
		if f := a.Field(i); f.Name == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonTag is the field's tag as encoding/json reads it: its name and the
// options that change the output. omitempty is no option on a struct,
// which encoding/json never omits (so ServicePort's targetPort, an
// IntOrString struct in the API, has none here), and "inline" none at all.
func jsonTag(f reflect.StructField) string {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	var kept []string
	for _, o := range strings.Split(opts, ",") {
		switch {
		case o == "", o == "inline":
		case o == "omitempty" && f.Type.Kind() == reflect.Struct:
		default:
			kept = append(kept, o)
		}
	}
	return strings.Join(append([]string{name}, kept...), ",")
}
