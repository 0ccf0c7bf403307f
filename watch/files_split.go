package watch

import "bytes"

// manifestDoc is one YAML document of a manifest file.
type manifestDoc struct {
	start int    // line (1-based) of the document's first line in the file
	line  int    // line of its first content line, where problems point
	text  []byte // the document, including a leading "---" marker if any
}

// splitManifest cuts a manifest file into its YAML documents, as kubectl
// does: a line that is "---" (alone or followed by blanks, a comment or
// content) starts a new document, and a line "..." ends one. The marker
// line stays the first line of its document, so a go-yaml line number N
// within a document is line start+N-1 of the file. Documents holding only
// blanks and comments are dropped. A JSON file is one document.
func splitManifest(data []byte) []manifestDoc {
	var docs []manifestDoc
	from, off := 0, 0 // the document's first byte in data, the next line's
	start := 1
	flush := func(next int) {
		buf := data[from:off:off] // its lines, in order; capped: never appended to
		if first := firstContentLine(buf); first > 0 {
			docs = append(docs, manifestDoc{start: start, line: start + first - 1, text: buf})
		}
		from, start = off, next
	}
	n := 0 // the line's number
	for l := range bytes.Lines(data) {
		n++
		if isDocMarker(l, "---") {
			flush(n)
		}
		off += len(l)
		if isDocMarker(l, "...") {
			flush(n + 1)
		}
	}
	flush(0)
	return docs
}

// lastLine is the file line of the document's last line: go-yaml reports
// errors at the end of the stream one line past it.
func (d manifestDoc) lastLine() int {
	n := bytes.Count(d.text, []byte("\n"))
	if !bytes.HasSuffix(d.text, []byte("\n")) {
		n++
	}
	return d.start + n - 1
}

// isDocMarker reports whether line is the document marker m ("---" or
// "..."), alone or followed by whitespace.
func isDocMarker(line []byte, m string) bool {
	t := bytes.TrimRight(line, " \t\r\n")
	if !bytes.HasPrefix(t, []byte(m)) {
		return false
	}
	return len(t) == len(m) || t[len(m)] == ' ' || t[len(m)] == '\t'
}

// firstContentLine returns the 1-based line of doc's first line that is not
// blank, a comment or a bare marker, or 0 when there is none.
func firstContentLine(doc []byte) int {
	i := 0
	for l := range bytes.Lines(doc) {
		i++
		t := bytes.TrimSpace(l)
		if bytes.HasPrefix(t, []byte("---")) && isDocMarker(l, "---") {
			t = bytes.TrimSpace(t[3:])
		}
		if len(t) > 0 && t[0] != '#' && !isDocMarker(l, "...") {
			return i
		}
	}
	return 0
}
