package why

import "strings"

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// rel is p relative to dir (p within dir), "." for dir itself.
func rel(p, dir string) string {
	if p == dir {
		return "."
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, dir+"/")
}

func firstComponent(p, dir string) string {
	r := rel(p, dir)
	first, _, _ := strings.Cut(r, "/")
	return first
}
