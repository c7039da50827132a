package why

// finish sorts and deduplicates a verdict.
func finish(v *Verdict) {
	set := map[Access]bool{}
	for _, a := range v.Access {
		set[a] = true
	}
	v.Access = []Access{}
	for _, a := range []Access{Read, Write, Exec, Connect, Passed} {
		if set[a] {
			v.Access = append(v.Access, a)
		}
	}
	v.At = dedup(v.At)
	var gs []Grant
	seenG := map[Grant]bool{}
	for _, g := range v.Via {
		if !seenG[g] {
			seenG[g] = true
			gs = append(gs, g)
		}
	}
	v.Via = gs
	var ss []Stop
	seenS := map[Stop]bool{}
	for _, s := range v.Stops {
		// A read-only stop says nothing once another path writes it.
		if set[Write] && (s.Rule == StopReadOnly || s.Rule == StopProtected || s.Rule == StopFixedTop) {
			continue
		}
		if !seenS[s] {
			seenS[s] = true
			ss = append(ss, s)
		}
	}
	v.Stops = ss
}

func dedup(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
