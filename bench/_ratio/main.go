// Command ratio reads `go test -bench` output and prints, for each
// benchmark whose sub-benchmarks are named KEY=VALUE (launch=bare,
// path=direct...), the median of every metric per value and each value's
// time as a ratio to the first value's (or -base's): the side-by-side
// table `make bench` closes with. benchstat shows the same medians with
// confidence intervals; this adds the ratios a closing note quotes.
//
//	go test ./bench -run '^$' -bench Initialize -count 10 | go run ./bench/_ratio
//	go test ./runtime/egress -run '^$' -bench Egress -count 10 | go run ./bench/_ratio -col path -base direct
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line is `BenchmarkX/key=value/op=y-2  N  123 ns/op  4 resident-kB`.
var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

type series struct {
	group   string
	values  []string                        // in first-seen order
	metrics []string                        // units, in first-seen order
	samples map[string]map[string][]float64 // value -> unit -> samples
}

func main() {
	col := flag.String("col", "", "the KEY whose values are compared (in a name without it, its first KEY=)")
	base := flag.String("base", "", "the value the ratios are to (default: each group's first)")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *col, *base); err != nil {
		fmt.Fprintln(os.Stderr, "ratio:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, col, base string) error {
	var groups []*series
	byGroup := map[string]*series{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		group, value, ok := split(m[1], col)
		if !ok {
			continue
		}
		s := byGroup[group]
		if s == nil {
			s = &series{group: group, samples: map[string]map[string][]float64{}}
			byGroup[group] = s
			groups = append(groups, s)
		}
		if s.samples[value] == nil {
			s.samples[value] = map[string][]float64{}
			s.values = append(s.values, value)
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			if !slices.Contains(s.metrics, unit) {
				s.metrics = append(s.metrics, unit)
			}
			s.samples[value][unit] = append(s.samples[value][unit], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, s := range groups {
		print(out, s, base)
	}
	return nil
}

// split cuts the KEY=VALUE element for col (or, in a name without it,
// the first one) out of a benchmark's name: BenchmarkEgress/op=bulk/path=proxy
// with col path is group BenchmarkEgress/op=bulk/path=*, value path=proxy.
func split(name, col string) (group, value string, ok bool) {
	parts := strings.Split(name, "/")
	at := -1
	for i, p := range parts {
		key, _, found := strings.Cut(p, "=")
		if found && key == col {
			at = i
			break
		}
		if found && at < 0 {
			at = i
		}
	}
	if at < 0 {
		return "", "", false
	}
	value = parts[at]
	parts[at] = strings.SplitN(value, "=", 2)[0] + "=*"
	return strings.Join(parts, "/"), value, true
}

func print(out io.Writer, s *series, base string) {
	ref := s.values[0]
	for _, v := range s.values {
		if strings.SplitN(v, "=", 2)[1] == base {
			ref = v
		}
	}
	fmt.Fprintf(out, "\n%s (medians; ratio = time / %s's)\n", s.group, ref)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "\t")
	for _, u := range s.metrics {
		fmt.Fprintf(w, "%s\t", u)
		if u == "ns/op" {
			fmt.Fprint(w, "ratio\t")
		}
	}
	fmt.Fprintln(w)
	refTime := median(s.samples[ref]["ns/op"])
	for _, v := range s.values {
		fmt.Fprintf(w, "%s\t", v)
		for _, u := range s.metrics {
			m := median(s.samples[v][u])
			fmt.Fprintf(w, "%s\t", format(m, u))
			if u == "ns/op" {
				if refTime > 0 && m > 0 {
					fmt.Fprintf(w, "%.2fx\t", m/refTime)
				} else {
					fmt.Fprint(w, "-\t")
				}
			}
		}
		fmt.Fprintln(w)
	}
	w.Flush()
}

func format(v float64, unit string) string {
	switch {
	case v < 0:
		return "-"
	case unit == "ns/op" && v >= 1e6:
		return fmt.Sprintf("%.2fms", v/1e6)
	case unit == "ns/op" && v >= 1e3:
		return fmt.Sprintf("%.1fµs", v/1e3)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// median of xs; -1 when there are none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
