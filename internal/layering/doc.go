// Package layering holds the test that the tree's folders are its layers
// (docs/architecture.md): each package imports only from its own layer and
// those below it.
package layering
