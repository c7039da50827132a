package cli

import (
	"errors"

	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/spf13/cobra"
)

// sarifCategoryFlag adds --sarif-category to a command that writes SARIF:
// the run's code scanning category (automationDetails.id), def unless
// given. A category is checked as the flag is parsed (findings.Category)
// and kept as given; the writer adds the trailing "/" a category ends in.
func sarifCategoryFlag(cmd *cobra.Command, p *string, def string) {
	*p = def
	cmd.Flags().Var((*sarifCategory)(p), "sarif-category",
		"--format sarif: the run's code scanning category (automationDetails.id), so each command's upload keeps its own alerts")
}

// sarifCategory is --sarif-category's value.
type sarifCategory string

func (c *sarifCategory) String() string { return string(*c) }
func (c *sarifCategory) Type() string   { return "string" }
func (c *sarifCategory) Set(s string) error {
	if s == "" {
		return errors.New(`a category is not empty (e.g. "mcpolicy/lint/")`)
	}
	if _, err := findings.Category(s); err != nil {
		return err
	}
	*c = sarifCategory(s)
	return nil
}
