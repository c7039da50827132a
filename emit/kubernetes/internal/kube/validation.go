package kube

import (
	"strconv"
	"strings"
)

// The name checks of k8s.io/apimachinery/pkg/util/validation, with the
// same results and messages (which reach users). The patterns are matched
// by hand, not by regexp: compiling them would cost every start.

const (
	dns1123LabelFmt          = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123LabelErrMsg       = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	dns1123SubdomainFmt      = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainErrorMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	configMapKeyFmt          = `[-._a-zA-Z0-9]+`
	configMapKeyErrMsg       = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
	labelKeyFmt              = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	labelKeyErrMsg           = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueFmt            = "(" + labelKeyFmt + ")?"
	labelValueErrMsg         = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)

// IsDNS1123Label is validation.IsDNS1123Label.
func IsDNS1123Label(value string) []string {
	var errs []string
	if len(value) > 63 {
		errs = append(errs, maxLenError(63, "characters"))
	}
	if !isLabel(value) {
		if isSubdomain(value) {
			errs = append(errs, "must not contain dots")
		} else {
			errs = append(errs, regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return errs
}

// IsDNS1123Subdomain is validation.IsDNS1123Subdomain.
func IsDNS1123Subdomain(value string) []string {
	return isDNS1123Subdomain(value, "characters")
}

// isDNS1123Subdomain: util/validation's says "characters", the newer
// api/validate/content's (under IsQualifiedName) "bytes".
func isDNS1123Subdomain(value, unit string) []string {
	var errs []string
	if len(value) > 253 {
		errs = append(errs, maxLenError(253, unit))
	}
	if !isSubdomain(value) {
		errs = append(errs, regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// IsConfigMapKey is validation.IsConfigMapKey.
func IsConfigMapKey(value string) []string {
	var errs []string
	if len(value) > 253 {
		errs = append(errs, maxLenError(253, "characters"))
	}
	if value == "" || !all(value, isConfigMapKeyChar) {
		errs = append(errs, regexError(configMapKeyErrMsg, configMapKeyFmt, "key.name", "KEY_NAME", "key-name"))
	}
	switch {
	case value == ".":
		errs = append(errs, `must not be '.'`)
	case value == "..":
		errs = append(errs, `must not be '..'`)
	case strings.HasPrefix(value, ".."):
		errs = append(errs, `must not start with '..'`)
	}
	return errs
}

// IsQualifiedName is validation.IsQualifiedName (content.IsLabelKey).
func IsQualifiedName(value string) []string {
	var errs []string
	parts := strings.Split(value, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		var prefix string
		prefix, name = parts[0], parts[1]
		if len(prefix) == 0 {
			errs = append(errs, "prefix part must be non-empty")
		} else {
			for _, msg := range isDNS1123Subdomain(prefix, "bytes") {
				errs = append(errs, "prefix part "+msg)
			}
		}
	default:
		return append(errs, "a valid label key "+regexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc")+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if len(name) == 0 {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > 63 {
		errs = append(errs, "name part "+maxLenError(63, "bytes"))
	}
	if !isLabelKey(name) {
		errs = append(errs, "name part "+regexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// IsValidLabelValue is validation.IsValidLabelValue (content.IsLabelValue).
func IsValidLabelValue(value string) []string {
	var errs []string
	if len(value) > 63 {
		errs = append(errs, maxLenError(63, "bytes"))
	}
	if value != "" && !isLabelKey(value) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

func maxLenError(n int, unit string) string {
	return "must be no more than " + strconv.Itoa(n) + " " + unit
}

func regexError(msg, re string, examples ...string) string {
	msg += " (e.g. "
	for i, e := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + e + "', "
	}
	return msg + "regex used for validation is '" + re + "')"
}

// isLabel matches dns1123LabelFmt: [-a-z0-9], alphanumeric at both ends.
func isLabel(s string) bool {
	return s != "" && isLowerAlnum(s[0]) && isLowerAlnum(s[len(s)-1]) &&
		all(s, func(c byte) bool { return c == '-' || isLowerAlnum(c) })
}

// isSubdomain matches dns1123SubdomainFmt: labels joined by dots.
func isSubdomain(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !isLabel(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// isLabelKey matches labelKeyFmt: [-A-Za-z0-9_.], alphanumeric at both ends.
func isLabelKey(s string) bool {
	return s != "" && isAlnum(s[0]) && isAlnum(s[len(s)-1]) &&
		all(s, func(c byte) bool { return c == '-' || c == '_' || c == '.' || isAlnum(c) })
}

func isConfigMapKeyChar(c byte) bool { return c == '-' || c == '.' || c == '_' || isAlnum(c) }

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

// all reports whether every byte of s satisfies ok: a byte of a
// multi-byte rune never does, as no pattern here holds a non-ASCII rune.
func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
