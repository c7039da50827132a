package toolrelay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// fromClient forwards the client's lines to the server until the client's
// EOF or the server's stdin fails, then closes the server's stdin.
func (r *relay) fromClient() {
	defer r.closeServerIn()
	lr := newLineReader(r.c.ClientIn, MaxClientLine)
	for {
		line, over, err := lr.next()
		if err != nil {
			return
		}
		if over {
			if r.refuseLong(line, lr) != nil {
				return
			}
			continue
		}
		forward, answers := r.clientLine(line)
		if len(answers) > 0 && r.answer(answers...) != nil {
			return
		}
		if forward {
			if _, err := r.c.ServerIn.Write(line); err != nil {
				return
			}
		}
	}
}

// refuseLong refuses a line over MaxClientLine, answering the id its
// start holds, and reads the rest of it away.
func (r *relay) refuseLong(prefix []byte, lr *lineReader) error {
	var id json.RawMessage
	s := scanner{onID: func(v []byte, over bool, _ int64) {
		if id == nil && !over {
			id = append(json.RawMessage(nil), v...)
		}
	}}
	s.feed(prefix)
	for {
		p, last, err := lr.chunk()
		if err != nil {
			return err
		}
		if id == nil && s.off < MaxClientLine+maxID { // an id just past the start is still read
			s.feed(p)
		}
		if last {
			break
		}
	}
	f := &refusal{rpcError: rpcError{Code: codeInvalidReq,
		Message: fmt.Sprintf("mcpolicy: a message over %d MiB: the tool relay refuses it unread, not forwarded", MaxClientLine>>20)}}
	f.decision = Decision{Kind: KindCallRefused, Reason: f.Message, ID: id}
	r.log(f.decision)
	if id == nil || !json.Valid(id) {
		id = nil
	}
	return r.answer(f.response(id))
}

// message is what the relay read of one client message.
type message struct {
	id     json.RawMessage // nil: a notification (or a response)
	method string
	list   bool // a tools/list request
	cursor bool
}

// clientLine decides one line: forward it as read, or answer it.
func (r *relay) clientLine(line []byte) (forward bool, answers [][]byte) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return true, nil
	}
	if !utf8.Valid(t) {
		return false, [][]byte{r.malformed(t, "it is not UTF-8")}
	}
	switch t[0] {
	case '{':
		m, f := r.inspect(t)
		if f != nil {
			r.log(f.decision)
			if m.id == nil && m.method != "" {
				return false, nil // a notification gets no answer
			}
			return false, [][]byte{f.response(m.id)}
		}
		if f := r.remember([]message{m}); f != nil {
			r.log(f.decision)
			return false, [][]byte{f.response(m.id)}
		}
		return true, nil
	case '[':
		return r.batch(t)
	}
	return false, [][]byte{r.malformed(t, "it is not a JSON object or array")}
}

// malformed refuses a line the relay cannot read: it may be a tools/call
// a lenient parser reads.
func (r *relay) malformed(t []byte, why string) []byte {
	var id json.RawMessage
	s := scanner{onID: func(v []byte, over bool, _ int64) {
		if id == nil && !over && json.Valid(v) {
			id = append(json.RawMessage(nil), v...)
		}
	}}
	s.feed(t)
	f := &refusal{rpcError: rpcError{Code: codeParse,
		Message: "mcpolicy: the tool relay cannot read this message (" + why + "): not forwarded"}}
	r.log(Decision{Kind: KindCallRefused, Reason: f.Message, ID: compact(id)})
	return f.response(compact(id))
}

// inspect reads one message object and decides it, changing nothing.
func (r *relay) inspect(raw []byte) (message, *refusal) {
	var m message
	obj, err := toolpolicy.ObjectKeys(raw, messageKeys...)
	if err != nil {
		s := scanner{onID: func(v []byte, over bool, _ int64) {
			if m.id == nil && !over && json.Valid(v) {
				m.id = compact(v)
			}
		}}
		s.feed(raw)
		return m, &refusal{rpcError: rpcError{Code: codeParse,
			Message: "mcpolicy: the tool relay cannot read this message (" + err.Error() + "): not forwarded"},
			decision: Decision{Kind: KindCallRefused, Reason: "malformed message: " + err.Error(), ID: m.id}}
	}
	if id, ok := obj["id"]; ok {
		m.id = compact(id)
	}
	rawMethod, ok := obj["method"]
	if !ok {
		return m, nil // a response to the server's request
	}
	if json.Unmarshal(rawMethod, &m.method) != nil {
		return m, r.invalid(m.id, "its method is not a string")
	}
	switch m.method {
	case "tools/call":
		return m, r.checkCall(obj, m.id)
	case "tools/list":
		if m.id == nil {
			return m, nil
		}
		m.list = true
		if len(m.id) > maxID {
			return m, r.invalid(nil, fmt.Sprintf("a tools/list id over %d bytes", maxID))
		}
		if p, err := toolpolicy.ObjectKeys(obj["params"], "cursor"); err != nil || p["cursor"] != nil {
			m.cursor = true
		}
		r.mu.Lock()
		refused := r.pinRefused
		r.mu.Unlock()
		if refused != "" {
			return m, r.pinRefusal(m.id, "", refused)
		}
	}
	return m, nil
}

func (r *relay) invalid(id json.RawMessage, why string) *refusal {
	msg := "mcpolicy: the tool relay refuses this message (" + why + "): not forwarded"
	return &refusal{rpcError: rpcError{Code: codeInvalidReq, Message: msg},
		decision: Decision{Kind: KindCallRefused, Reason: why, ID: id}}
}

// checkCall decides a tools/call: the policy, then what the server's
// answers taught (a pin change).
func (r *relay) checkCall(obj map[string]json.RawMessage, id json.RawMessage) *refusal {
	params, err := toolpolicy.ObjectKeys(obj["params"], "name", "arguments")
	if err != nil {
		return r.invalid(id, "tools/call params: "+err.Error())
	}
	var name string
	if json.Unmarshal(params["name"], &name) != nil {
		return r.invalid(id, "tools/call without a tool name that is a string")
	}
	if ref := r.pol.CheckCall(name, params["arguments"]); ref != nil {
		return r.policyRefusal(ref, id, KindCallRefused)
	}
	r.mu.Lock()
	refused, hidden := r.pinRefused, r.hidden[name]
	r.mu.Unlock()
	switch {
	case refused != "":
		return r.pinRefusal(id, name, refused)
	case hidden != "":
		ref := &toolpolicy.Refusal{Tool: name, Field: r.pol.PinField(), Reason: "hidden: the server changed it after it was pinned (" + hidden + ")"}
		return r.policyRefusal(ref, id, KindCallRefused)
	}
	return nil
}

func (r *relay) policyRefusal(ref *toolpolicy.Refusal, id json.RawMessage, kind string) *refusal {
	return &refusal{
		rpcError: rpcError{Code: codeRefused, Message: ref.Message(r.pol.PolicyFile),
			Data: &errorData{Policy: r.pol.PolicyFile, Field: ref.Field, Tool: ref.Tool, Arg: ref.Arg}},
		decision: Decision{Kind: kind, Tool: ref.Tool, Arg: ref.Arg, Field: ref.Field, Reason: ref.Reason, ID: id},
	}
}

// pinRefusal refuses a tools/list or tools/call once the pin refused the
// server's tools/list.
func (r *relay) pinRefusal(id json.RawMessage, tool, why string) *refusal {
	field := r.pol.OnPinChangeField()
	msg := fmt.Sprintf("mcpolicy: the tools of server %q differ from their pin (%s), and %s %s says \"refuse\": run `mcpolicy pin %s` to review them",
		r.pol.Server, why, r.pol.PolicyFile, field, r.pol.Server)
	return &refusal{
		rpcError: rpcError{Code: codeRefused, Message: msg,
			Data: &errorData{Policy: r.pol.PolicyFile, Field: field, Tool: tool}},
		decision: Decision{Kind: KindPinRefused, Tool: tool, Field: field, Reason: why, ID: id},
	}
}

// remember records the tools/list requests among ms, all or none, and
// forgets answered tools/list ids the client reuses. Under out: no server
// line is being written meanwhile.
func (r *relay) remember(ms []message) *refusal {
	r.out.Lock()
	defer r.out.Unlock()
	n := 0
	for _, m := range ms {
		if m.list {
			n++
		}
	}
	if len(r.lists.m)+n > maxLists {
		for n > 0 && r.lists.evict() {
			n--
		}
		if len(r.lists.m)+n > maxLists {
			return r.invalid(nil, fmt.Sprintf("over %d tools/list requests unanswered", maxLists))
		}
	}
	for _, m := range ms {
		switch {
		case m.list:
			r.lists.add(idKey(m.id), &listEntry{id: m.id, cursor: m.cursor})
		case m.id != nil && m.method != "":
			r.lists.reuse(idKey(m.id))
			r.pending.add(idKey(m.id))
		}
	}
	return nil
}

// batch decides a JSON array of messages: forwarded as read when no
// message in it is refused, refused whole otherwise.
func (r *relay) batch(t []byte) (bool, [][]byte) {
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		return false, [][]byte{r.malformed(t, err.Error())}
	}
	ms := make([]message, len(elems))
	var first *refusal
	refused := make([]*refusal, len(elems))
	for i, e := range elems {
		if len(bytes.TrimSpace(e)) == 0 || bytes.TrimSpace(e)[0] != '{' {
			refused[i] = r.invalid(nil, "a batch element that is not an object")
		} else {
			ms[i], refused[i] = r.inspect(e)
		}
		if first == nil && refused[i] != nil {
			first = refused[i]
		}
	}
	if first == nil {
		if f := r.remember(ms); f != nil {
			first = f
		} else {
			return true, nil
		}
	}
	// Refused whole: one error per request, in one array.
	var out []json.RawMessage
	for i, m := range ms {
		if refused[i] != nil {
			r.log(refused[i].decision)
		}
		if m.id == nil {
			continue
		}
		f := refused[i]
		if f == nil {
			f = &refusal{rpcError: rpcError{Code: codeRefused,
				Message: "mcpolicy: not forwarded: its batch holds a message the tool relay refuses (" + first.Message + ")"}}
		}
		out = append(out, f.response(m.id))
	}
	if len(out) == 0 {
		return false, nil
	}
	return false, [][]byte{encode(out)}
}
