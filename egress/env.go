package egress

import "strconv"

// ProxyEnv is the environment that points a confined server at the proxy
// on 127.0.0.1:port, in the spellings programs read: curl and Python's
// urllib read the lower-case names (curl ignores upper-case HTTP_PROXY),
// Go libraries the upper-case ones; Node.js reads them only when
// NODE_USE_ENV_PROXY=1 (22.21 and 24.5 on; older versions ignore both and
// find no route). Loopback is never proxied: inside the sandbox nothing
// else listens there.
func ProxyEnv(port int) [][2]string {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	const local = "localhost,127.0.0.1,::1"
	return [][2]string{
		{"HTTPS_PROXY", url}, {"HTTP_PROXY", url}, {"https_proxy", url}, {"http_proxy", url},
		{"NODE_USE_ENV_PROXY", "1"},
		{"NO_PROXY", local}, {"no_proxy", local},
	}
}
