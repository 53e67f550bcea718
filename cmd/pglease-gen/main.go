// Command pglease-gen renders, packages and tests the pg_lease extension.
package main

import (
	"os"

	"github.com/pglease/pglease-gen/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
