package cli

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/rpm"
)

// completeList offers a comma-separated flag's values: after "14,1" it
// offers "14,15", "14,16" and so on, each value once, from the model. A
// value that stands alone (all, go) is offered only first, and nothing
// after it.
func completeList(values []string, alone ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
		done, prefix := "", typed
		if i := strings.LastIndex(typed, ","); i >= 0 {
			done, prefix = typed[:i+1], typed[i+1:]
		}
		given := map[string]bool{}
		for _, v := range strings.Split(done, ",") {
			given[v] = true
		}
		var out []string
		for _, v := range values {
			solo := slices.Contains(alone, v)
			if done != "" && (solo || slices.ContainsFunc(alone, func(a string) bool { return given[a] })) {
				continue
			}
			if !given[v] && strings.HasPrefix(v, prefix) {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// completeOne offers one of values.
func completeOne(values []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func majorNames() []string {
	out := []string{"all"}
	for _, m := range model.PgLease.Majors {
		out = append(out, strconv.Itoa(m))
	}
	return out
}

func distroNames(format string) []string {
	ds := model.Distros
	if format != "" {
		ds = model.OfFormat(ds, format)
	}
	return model.Names(ds)
}

// completions registers the value completions of the flags cmd has among
// --pg, --distro, --builder and --arch.
func completions(cmd *cobra.Command) {
	for flag, fn := range map[string]cobra.CompletionFunc{
		"pg":      completeList(majorNames(), "all"),
		"distro":  completeList(append([]string{"all"}, distroNames("")...), "all"),
		"builder": completeList([]string{rpm.PureGo, rpm.Rpmbuild, deb.Dpkg}, rpm.PureGo),
		"arch":    completeOne(append([]string{}, model.MachineArches...)),
	} {
		if cmd.Flags().Lookup(flag) != nil {
			_ = cmd.RegisterFlagCompletionFunc(flag, fn)
		}
	}
}
