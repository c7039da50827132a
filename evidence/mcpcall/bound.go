package mcpcall

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the server sends the client unasked is bounded here, below the SDK.
//
// Requests (ping, roots/list, sampling/createMessage, ...): the SDK
// answers each on a goroutine of its own, which holds the request until
// its reply is written to the server's stdin. A server that sends requests
// without end and never reads its stdin cost the caller a goroutine and
// its memory per request, without bound (the red team's: 128k goroutines,
// 2.4 GiB in 21 s). So a session ends, with an error, once the server has
// sent
//
//   - more than MaxRequestsInFlight requests not answered yet (read, and
//     their replies not yet written): an honest server has one or two (a
//     ping is answered at once); more means it sends faster than it reads
//     the answers, and every further request only adds a goroutine;
//   - requests not answered yet that hold more than MaxRequestBytesInFlight
//     (method, id and params; what stays in memory while a reply waits):
//     the SDK reads a message of up to 16 MiB, and 64 of those would be a
//     GiB; nothing mcpcall's client answers takes params worth the name;
//   - more than MaxRequests requests in all: a session is one tools/list
//     or one tools/call, bounded by its caller's deadline (a minute, for
//     prove); a server pinging once a second to keep alive sends 60 in
//     that time, and mcpcall's client offers nothing else to ask for (no
//     sampling, no elicitation, no roots of its own). A thousand is far
//     above any honest use, and cheap to answer.
//
// Notifications are dropped as they are read. The SDK queues each for one
// goroutine that handles them in turn; the queue has no bound, and a
// notification can cost more to handle than to read (a notifications/message
// whose data is a long array of small objects: read as raw bytes, handled
// by decoding every object), so a server sending those without end grew
// the caller's heap by hundreds of MiB in seconds, and the session's Close
// waited for the queue to drain, past its deadline. mcpcall's client sets
// no handler for any notification: the SDK would do nothing with them
// (bar cancelling its answer to one of the server's requests, which it
// gives at once anyway, and forgetting the tools it has cached, which only
// its HTTP transports use), so dropping them changes nothing but their cost,
// which is then the reading alone, bounded by the caller's deadline. Give
// the client a notification handler and this must let its notifications
// through, with a bound of their own.
const (
	MaxRequestsInFlight     = 64
	MaxRequestBytesInFlight = 16 << 20
	MaxRequests             = 1000
)

// boundedTransport is a mcp.Transport whose connection drops the server's
// notifications and, by failing Read, refuses a server that sends more
// requests than MaxRequestsInFlight, MaxRequestBytesInFlight or
// MaxRequests allow.
type boundedTransport struct {
	mcp.Transport
	// lists, when set, keeps the results of the client's tools/list
	// calls raw (rawLists).
	lists *rawLists
}

func (t boundedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &boundedConn{Connection: c, pending: map[jsonrpc.ID]pending{}, lists: t.lists}, nil
}

// boundedConn counts the requests the server sends (the messages Read
// returns that are calls, with an id) and the replies to them written
// back. Past a bound it fails Read — which ends the session: the SDK
// fails every call of the client's still waiting with that error — and
// closes the underlying connection at once, so that replies blocked
// writing to a server that does not read fail too, and their goroutines
// end.
type boundedConn struct {
	mcp.Connection

	mu       sync.Mutex
	pending  map[jsonrpc.ID]pending // requests read whose reply is not written yet, by id
	inFlight int                    // the sum of pending's n
	bytes    int                    // the sum of pending's bytes
	total    int                    // requests read
	err      error                  // set once a bound is passed: the session is over

	lists *rawLists
}

// pending is what is in flight under one id: one request, unless the
// server reuses an id while its first request is unanswered (the SDK
// refuses the second, with a reply without id, so n stays above zero and
// the counts stay high: a server doing that only reaches the bounds
// sooner).
type pending struct{ n, bytes int }

func (c *boundedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			if r, isResp := msg.(*jsonrpc.Response); isResp && c.lists != nil {
				c.lists.read(r)
			}
			return msg, nil // a response to one of the client's calls
		}
		if !req.IsCall() {
			continue // a notification: dropped (see above MaxRequests)
		}
		if err := c.request(req); err != nil {
			// Close now, not when the SDK gets to it: it closes only
			// once every reply is written, and those blocked will not be
			// until the server's stdin is closed. Closing stops the
			// server too (stdin closed, then SIGTERM, then SIGKILL),
			// which takes a while: Read returns at once, and the SDK's
			// own Close, later, waits for it.
			go c.Connection.Close()
			return nil, err
		}
		return msg, nil
	}
}

// request counts req in, and returns the error that ends the session if
// it passes a bound.
func (c *boundedConn) request(req *jsonrpc.Request) error {
	size := len(req.Method) + len(req.Params)
	if id, ok := req.ID.Raw().(string); ok {
		size += len(id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[req.ID]
	p.n++
	p.bytes += size
	c.pending[req.ID] = p
	c.inFlight++
	c.bytes += size
	c.total++
	switch {
	case c.inFlight > MaxRequestsInFlight:
		c.err = fmt.Errorf("the server sent more than %d requests not answered yet (it sends them faster than it reads the answers): ending the session", MaxRequestsInFlight)
	case c.bytes > MaxRequestBytesInFlight:
		c.err = fmt.Errorf("the server's requests not answered yet hold more than %d MiB: ending the session", MaxRequestBytesInFlight>>20)
	case c.total > MaxRequests:
		c.err = fmt.Errorf("the server sent more than %d requests in one session: ending the session", MaxRequests)
	}
	return c.err
}

func (c *boundedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && c.lists != nil && req.Method == "tools/list" && req.IsCall() {
		c.lists.sent(req.ID)
	}
	err = c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		// Written or failed, the reply no longer holds its request.
		c.mu.Lock()
		if p, ok := c.pending[resp.ID]; ok {
			c.inFlight--
			if p.n--; p.n == 0 {
				c.bytes -= p.bytes
				delete(c.pending, resp.ID)
			} else {
				c.pending[resp.ID] = p
			}
		}
		c.mu.Unlock()
	}
	return err
}
