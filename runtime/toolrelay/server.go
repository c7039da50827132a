package toolrelay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// fromServer forwards the server's lines to the client until the server's
// stdout ends.
func (r *relay) fromServer() error {
	lr := newLineReader(r.c.ServerOut, MaxServerLine)
	for {
		line, over, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if over {
			err = r.serverLong(line, lr)
		} else {
			err = r.serverLine(line)
		}
		if err != nil {
			return err
		}
	}
}

// serverLine writes one whole line to the client, filtered when it
// answers a tools/list.
func (r *relay) serverLine(line []byte) error {
	r.out.Lock()
	defer r.out.Unlock()
	var b balance
	if b.feed(line); b.open() {
		body, end := cutNL(line)
		line = append(append(append(make([]byte, 0, len(line)+1), body...), sealByte...), end...)
		r.logSealed()
	}
	var hits []*listEntry
	recheck := false
	var objs []lineObject // each top-level object's keys and ids
	var s scanner
	obj := func() *lineObject {
		for len(objs) < s.objects {
			objs = append(objs, lineObject{})
		}
		return &objs[s.objects-1]
	}
	s.onKey = func(key string, _ int64) {
		switch toolpolicy.FoldKey(key) {
		case "METHOD":
			obj().method = true
		case "RESULT":
			obj().result = true
		case "ERROR":
			obj().err = true
		}
	}
	s.onID = func(v []byte, over bool, _ int64) {
		if over {
			recheck = true
			return
		}
		k := idKey(v)
		if e := r.lists.get(k); e != nil {
			hits = append(hits, e)
		} else {
			o := obj()
			o.ids = append(o.ids, k)
		}
	}
	s.onArray = func(int64) { recheck = true }
	s.feed(line)
	if len(hits) == 0 && !recheck {
		for _, o := range objs {
			if o.method || !o.result {
				continue
			}
			for _, k := range o.ids {
				if !r.pending.has(k) {
					r.logOnceLocked(Decision{Kind: KindToolHidden, Field: r.section(),
						Reason: "a server's result for a request the relay never forwarded, dropped: a client may take it for the answer to a request on its way"})
					return nil
				}
			}
		}
		for _, o := range objs {
			if !o.method && (o.result || o.err) {
				for _, k := range o.ids {
					r.pending.done(k)
				}
			}
		}
		return r.writeClient(line)
	}
	out := r.filterLine(line, hits)
	if out == nil {
		return r.writeClient(line)
	}
	return r.writeClient(out, nl)
}

// dropped is filterLine's answer for a line the client does not get: an
// empty line.
var dropped = []byte{}

// unforwarded reports whether v, an element of a batch or a message whose
// id the scanner could not hold, is a result for a request the relay
// never forwarded, or an object it cannot read: a client reading batches
// (the Go SDK's, before protocol 2025-06-18) would take it as serverLine
// says. A result for a forwarded request is that request's answer. An
// object it cannot read counts when strict (no tools/list answer seen on
// the line: with one, that answer fails closed instead).
func (r *relay) unforwarded(v []byte, strict bool) bool {
	obj, err := toolpolicy.ObjectKeys(v, messageKeys...)
	if err != nil {
		return strict && len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '{'
	}
	_, method := obj["method"]
	_, result := obj["result"]
	id, hasID := obj["id"]
	if method || !result || !hasID {
		return false
	}
	k := idKey(id)
	if r.lists.get(k) != nil {
		return false // a tools/list's answer: filtered
	}
	if !r.pending.has(k) {
		r.logOnceLocked(Decision{Kind: KindToolHidden, Field: r.section(),
			Reason: "a server's result for a request the relay never forwarded, dropped: a client may take it for the answer to a request on its way"})
		return true
	}
	r.pending.done(k)
	return false
}

// lineObject is what serverLine's scanner read of one top-level object.
type lineObject struct {
	method, result, err bool
	ids                 []string // ids that answer no tools/list
}

// logOnceLocked is logOnce for a caller that does not hold mu.
func (r *relay) logOnceLocked(d Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logOnce(d)
}

// filterLine is what the client gets instead of line, nil for line itself.
// hits are the tools/list answers the scanner saw in it.
func (r *relay) filterLine(line []byte, hits []*listEntry) []byte {
	var vals []json.RawMessage
	d := json.NewDecoder(bytes.NewReader(line))
	for {
		var v json.RawMessage
		err := d.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if len(hits) == 0 {
				return nil // not JSON, and no tools/list answer seen in it: the client decides
			}
			return r.failClosed(hits, "the answer does not parse: "+err.Error())
		}
		vals = append(vals, v)
	}
	if len(vals) != 1 {
		var all []*listEntry
		for _, v := range vals {
			all = append(all, r.answersIn(v)...)
		}
		if len(all) == 0 {
			return nil
		}
		return r.failClosed(all, "more than one JSON value on its line")
	}
	v := bytes.TrimSpace(vals[0])
	switch v[0] {
	case '{':
		if len(hits) == 0 && r.unforwarded(v, true) {
			return dropped
		}
		return r.filterObject(v)
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) != nil {
			return nil
		}
		for _, e := range elems {
			if r.unforwarded(e, len(hits) == 0) {
				return dropped
			}
		}
		changed := false
		for i, e := range elems {
			e = bytes.TrimSpace(e)
			if len(e) == 0 || e[0] != '{' {
				continue
			}
			if f := r.filterObject(e); f != nil {
				elems[i], changed = f, true
			}
		}
		if !changed {
			return nil
		}
		return encode(elems)
	}
	return nil
}

// answersIn are the remembered tools/list v answers, itself or in a batch.
func (r *relay) answersIn(v json.RawMessage) []*listEntry {
	var out []*listEntry
	s := scanner{onID: func(id []byte, over bool, _ int64) {
		if e := r.lists.get(idKey(id)); e != nil {
			out = append(out, e)
		}
	}}
	s.feed(v)
	var elems []json.RawMessage
	if json.Unmarshal(v, &elems) == nil {
		for _, e := range elems {
			out = append(out, r.answersIn(e)...)
		}
	}
	return out
}

// filterObject filters one message object when it answers a tools/list,
// nil when it does not or passes unchanged.
func (r *relay) filterObject(v []byte) []byte {
	obj, err := toolpolicy.ObjectKeys(v, messageKeys...)
	if err != nil {
		if hits := r.answersIn(v); len(hits) > 0 {
			return r.failClosed(hits, "the answer does not parse: "+err.Error())
		}
		return nil
	}
	rawID, ok := obj["id"]
	if !ok {
		return nil
	}
	e := r.lists.get(idKey(rawID))
	if e == nil {
		return nil
	}
	if _, ok := obj["method"]; ok {
		_, res := obj["result"]
		_, rerr := obj["error"]
		if !res && !rerr {
			return nil // the server's own request: its ids are its own
		}
		return r.failClosed([]*listEntry{e}, "a message with a method and a result, and the id of a tools/list")
	}
	first := !e.answered
	e.answered = true
	res, ok := obj["result"]
	if !ok {
		return nil // an error answer shows no tools
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pinRefused != "" {
		return r.pinRefusal(e.id, "", r.pinRefused).response(e.id)
	}
	rm, err := toolpolicy.ObjectKeys(res, "tools", "nextCursor")
	if err != nil {
		return r.failClosedLocked([]*listEntry{e}, "its result: "+err.Error())
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(rm["tools"], &tools); err != nil || rm["tools"] == nil {
		return r.failClosedLocked([]*listEntry{e}, "its result holds no array of tools")
	}
	if first && !e.cursor {
		clear(r.seen) // a first page: the listing starts over
	}
	kept := make([]json.RawMessage, 0, len(tools))
	var keptNames, changes []string
	for _, t := range tools {
		name, ok, change := r.keepTool(t, e.id)
		if ok {
			kept, keptNames = append(kept, t), append(keptNames, name)
		}
		if change != "" {
			changes = append(changes, change)
		}
	}
	// A name listed twice, once as pinned and once changed: neither shows.
	for i := len(kept) - 1; i >= 0; i-- {
		if r.hidden[keptNames[i]] != "" {
			kept = append(kept[:i], kept[i+1:]...)
		}
	}
	if len(changes) > 0 && r.pol.OnPinChange == "refuse" {
		r.pinRefused = fmt.Sprintf("%d tools changed: %s", len(changes), changes[0])
		if len(changes) == 1 {
			r.pinRefused = changes[0]
		}
		f := r.pinRefusal(e.id, "", r.pinRefused)
		r.log(f.decision)
		return f.response(e.id)
	}
	if rm["nextCursor"] == nil && r.pin != nil {
		for _, ch := range r.pin.Missing(func(n string) bool { return r.seen[n] }) {
			r.logOnce(Decision{Kind: KindPinChanged, Tool: ch.Tool, Field: r.pol.PinField(), Reason: ch.String(), ID: e.id})
		}
	}
	if len(kept) == len(tools) {
		return nil
	}
	rm["tools"] = encode(kept)
	obj["result"] = encode(rm)
	return encode(obj)
}

// keepTool decides one listed tool; change is set when it differs from the
// pin. Under mu.
func (r *relay) keepTool(raw json.RawMessage, id json.RawMessage) (name string, keep bool, change string) {
	tm, err := toolpolicy.ObjectKeys(raw, pinnedKeys...)
	if err == nil {
		err = json.Unmarshal(tm["name"], &name)
	}
	if err != nil || tm["name"] == nil {
		r.logOnce(Decision{Kind: KindToolHidden, Field: r.section(),
			Reason: "a listed tool the relay cannot read, hidden", ID: id})
		return name, false, ""
	}
	if r.pin != nil && r.pin.Has(name) {
		r.seen[name] = true // listed, shown or not: not missing
	}
	if why := r.hidden[name]; why != "" {
		return name, false, ""
	}
	if ref := r.pol.Denied(name); ref != nil {
		r.logOnce(Decision{Kind: KindToolHidden, Tool: name, Field: ref.Field, Reason: ref.Reason, ID: id})
		return name, false, ""
	}
	if r.pin == nil {
		return name, true, ""
	}
	var t toolpolicy.PinnedTool
	var ch *toolpolicy.PinChange
	if json.Unmarshal(raw, &t) != nil {
		ch = &toolpolicy.PinChange{Tool: name, Change: toolpolicy.PinChanged, Parts: []string{"a field's type"}}
	} else {
		ch = r.pin.Tool(t)
	}
	if ch == nil {
		return name, true, ""
	}
	why := fmt.Sprintf("tool %q: %s", name, ch.Summary()) // to the client: no text of the server's
	r.logOnce(Decision{Kind: KindPinChanged, Tool: name, Field: r.pol.PinField(), Reason: ch.String(), ID: id})
	// A pinned tool that changed stays hidden, and refused when called; a
	// tool the pin does not hold is refused by the policy already (and the
	// map stays as small as the pin).
	if r.pol.OnPinChange != "refuse" && ch.Change == toolpolicy.PinChanged {
		r.hidden[name] = ch.Summary()
	}
	return name, false, why
}

// failClosed answers each tools/list in hits with an error instead of
// what the server sent.
func (r *relay) failClosed(hits []*listEntry, why string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failClosedLocked(hits, why)
}

func (r *relay) failClosedLocked(hits []*listEntry, why string) []byte {
	var out [][]byte
	done := map[*listEntry]bool{}
	for _, e := range hits {
		if done[e] {
			continue
		}
		done[e] = true
		e.answered = true
		msg := "mcpolicy: the tool relay refused the server's answer to tools/list (" + why + "): no tools are shown from it"
		f := &refusal{rpcError: rpcError{Code: codeRefused, Message: msg,
			Data: &errorData{Policy: r.pol.PolicyFile, Field: r.section()}}}
		r.log(Decision{Kind: KindToolHidden, Field: r.section(), Reason: "the server's answer to tools/list refused: " + why, ID: e.id})
		out = append(out, f.response(e.id))
	}
	return bytes.Join(out, nl)
}

func (r *relay) section() string {
	f := r.pol.PinField()
	return f[:len(f)-len(".pin")]
}

// logSealed logs, once a launch, that a line was sealed.
func (r *relay) logSealed() {
	r.logOnceLocked(Decision{Kind: KindToolHidden, Field: r.section(),
		Reason: "a server line that ends inside a JSON value, sealed with a NUL byte: a client reading values across lines would have joined it to the next"})
}
