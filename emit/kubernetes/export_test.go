package kubernetes

// Render is render, for the tests that render the real k8s.io/api objects
// the same way as the projection's.
var Render = render
