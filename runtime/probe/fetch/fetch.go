// Package fetch gives package probe its Fetch operation: a GET through the
// proxy the environment names, as a server's HTTP library would. It is
// its own package so that what links probe without it (the small launcher)
// does not link an HTTP client.
package fetch

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

func init() { probe.SetFetcher(get) }

// get is "ok" for a 2xx, "http N" when the proxy or the server answered N.
// Certificates are not verified: the question is whether the connection is
// carried.
func get(target string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		// A refused CONNECT is the proxy's answer too: report its status.
		OnProxyConnectResponse: func(_ context.Context, _ *url.URL, _ *http.Request, r *http.Response) error {
			if r.StatusCode != http.StatusOK {
				return probe.HTTPStatus(r.StatusCode)
			}
			return nil
		},
	}}
	resp, err := c.Get(target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return probe.HTTPStatus(resp.StatusCode)
	}
	return nil
}
