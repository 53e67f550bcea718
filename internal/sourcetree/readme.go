package sourcetree

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

// The repository README's extension page is between these markers: what
// the tarball's and the PGXN zip's README.md (META.json's docfile) are.
const (
	extensionBegin = "<!-- extension -->"
	extensionEnd   = "<!-- /extension -->"
)

// userDocs are the files besides README.md that the source tree ships
// for the extension's users: the docs and the changelog its links name.
func userDocs(src fs.FS) ([]string, error) {
	docs, err := fs.Glob(src, "docs/*.md")
	if err != nil {
		return nil, err
	}
	return append(docs, "CHANGELOG.md"), nil
}

// htmlComment is a line that is only an HTML comment.
var htmlComment = regexp.MustCompile(`(?m)^<!--.*-->\n`)

// markdownLink finds a markdown link's target: group 1.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// userPages are README.md (the repository README's extension page, under
// the extension's own title, with its license line) and the user docs,
// each relative link that leaves the shipped files made absolute: the
// project's file at the version's tag (base is the project's URL).
func userPages(ext model.Extension, src fs.FS, base string) (render.Files, error) {
	readme, err := fs.ReadFile(src, "README.md")
	if err != nil {
		return nil, err
	}
	text := string(readme)
	i, j := strings.Index(text, extensionBegin), strings.Index(text, extensionEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("README.md: no %s ... %s around the extension's page", extensionBegin, extensionEnd)
	}
	// (without the markers of the repository's tests)
	body := htmlComment.ReplaceAllString(text[i+len(extensionBegin):j], "")
	page := "# " + ext.Name + "\n\n" + strings.TrimSpace(body) + "\n\n## License\n\nPostgreSQL License; see [LICENSE](LICENSE).\n"
	files := render.Files{"README.md": []byte(page)}
	docs, err := userDocs(src)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if files[d], err = fs.ReadFile(src, d); err != nil {
			return nil, err
		}
	}
	shipped := map[string]bool{"LICENSE": true}
	for n := range files {
		shipped[n] = true
	}
	for name, b := range files {
		files[name] = []byte(markdownLink.ReplaceAllStringFunc(string(b), func(m string) string {
			target := markdownLink.FindStringSubmatch(m)[1]
			if strings.Contains(target, ":") || strings.HasPrefix(target, "#") {
				return m // a URL, or within the page
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := path.Clean(path.Join(path.Dir(name), file))
			if shipped[resolved] {
				return m
			}
			if anchor != "" {
				anchor = "#" + anchor
			}
			return "](" + base + "/blob/v" + ext.Version() + "/" + resolved + anchor + ")"
		}))
	}
	return files, nil
}
