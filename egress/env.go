package egress

import "strconv"

// ProxyEnv is the environment that points a confined server at the proxy
// on 127.0.0.1:port, in the spellings programs read: curl and Python's
// urllib read the lower-case names (curl ignores upper-case HTTP_PROXY),
// Go and Node libraries the upper-case ones. Loopback is never proxied:
// inside the sandbox nothing else listens there.
func ProxyEnv(port int) [][2]string {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	const local = "localhost,127.0.0.1,::1"
	return [][2]string{
		{"HTTPS_PROXY", url}, {"HTTP_PROXY", url}, {"https_proxy", url}, {"http_proxy", url},
		{"NO_PROXY", local}, {"no_proxy", local},
	}
}
