package fstools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

type lsArgs struct {
	Path string `json:"path"`
}

func lsTool(Options) tool.Tool {
	return define("ls",
		"List one directory level, sorted. Directories end in /; files show their size in bytes. Paths are absolute, like /src/app.py; a relative path starts at /.",
		`{"type":"object","properties":{"path":{"type":"string","description":"Directory to list.","default":"/"}},"additionalProperties":false}`,
		runLs)
}

func runLs(ctx context.Context, fs vfs.Backend, in lsArgs) (tool.Result, error) {
	p, bad := cleanPath(in.Path, "/")
	if bad != nil {
		return *bad, nil
	}
	entries, err := fs.List(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, vfs.ErrNotFound) && p == "/":
		entries = nil
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: directory %s does not exist. Run ls on a parent directory, or glob, to find the right path.", p), nil
	case errors.Is(err, vfs.ErrNotDir):
		return tool.Errorf("Error: %s is a file, not a directory. Use read_file to read it.", p), nil
	default:
		return failed(ctx, "listing "+p, err)
	}
	if len(entries) == 0 {
		if p == "/" {
			return tool.Text("The filesystem is empty: there are no files yet. Create one with write_file."), nil
		}
		return tool.Text(p + " is an empty directory."), nil
	}
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Path)
		if e.IsDir {
			b.WriteByte('/')
		} else {
			fmt.Fprintf(&b, " (%s)", plural(int(e.Size), "byte"))
		}
	}
	return tool.Text(b.String()), nil
}

type readArgs struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    *int   `json:"limit"`
}

func readTool(o Options) tool.Tool {
	desc := fmt.Sprintf("Read a text file, cat -n style: line number, tab, text. Returns up to limit lines (default %d) from a 0-based line offset; a closing notice gives the offset to continue from. Lines over %d characters are split into chunks numbered N.1, N.2 and so on.",
		o.ReadLimit, o.MaxLineChars)
	schema := fmt.Sprintf(`{"type":"object","properties":{"file_path":{"type":"string","description":"File to read."},"offset":{"type":"integer","description":"0-based index of the first line.","default":0},"limit":{"type":"integer","description":"Max lines to return.","default":%d}},"required":["file_path"],"additionalProperties":false}`,
		o.ReadLimit)
	return define("read_file", desc, schema, func(ctx context.Context, fs vfs.Backend, in readArgs) (tool.Result, error) {
		return runRead(ctx, fs, in, o)
	})
}

func runRead(ctx context.Context, fs vfs.Backend, in readArgs, o Options) (tool.Result, error) {
	p, bad := cleanPath(in.FilePath, "")
	if bad != nil {
		return *bad, nil
	}
	if in.Offset < 0 {
		return tool.Errorf("Error: offset must be 0 or more (it is the 0-based line to start at); got %d.", in.Offset), nil
	}
	limit := o.ReadLimit
	if in.Limit != nil {
		if *in.Limit <= 0 {
			return tool.Errorf("Error: limit must be 1 or more (the number of lines to return); got %d. Leave it out to get %d lines.", *in.Limit, o.ReadLimit), nil
		}
		limit = *in.Limit
	}
	content, err := fs.Read(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: file %s does not exist. Use ls or glob to find the right path.", p), nil
	case errors.Is(err, vfs.ErrIsDir):
		return tool.Errorf("Error: %s is a directory, not a file. Use ls to list it.", p), nil
	default:
		return failed(ctx, "reading "+p, err)
	}
	lines := splitLines(content)
	if len(lines) == 0 {
		return tool.Text(fmt.Sprintf("%s is empty (0 lines).", p)), nil
	}
	if in.Offset >= len(lines) {
		return tool.Errorf("Error: offset %d is past the end of %s, which has %s (offsets 0 to %d).",
			in.Offset, p, plural(len(lines), "line"), len(lines)-1), nil
	}
	end := len(lines)
	if limit < end-in.Offset {
		end = in.Offset + limit
	}
	var b strings.Builder
	for i := in.Offset; i < end; i++ {
		if i > in.Offset {
			b.WriteByte('\n')
		}
		writeNumbered(&b, i+1, strings.TrimSuffix(lines[i], "\r"), o.MaxLineChars)
	}
	if rest := len(lines) - end; rest > 0 {
		verb := "remain"
		if rest == 1 {
			verb = "remains"
		}
		fmt.Fprintf(&b, "\n\n[Lines %d-%d of %d shown; %s %s. Call read_file with offset=%d to continue.]",
			in.Offset+1, end, len(lines), plural(rest, "more line"), verb, end)
	}
	return tool.Text(b.String()), nil
}

// writeNumbered writes one line with its gutter, split into chunks of at
// most max characters; continuation chunks are labelled n.1, n.2, ...
func writeNumbered(b *strings.Builder, n int, line string, max int) {
	label := strconv.Itoa(n)
	gutter := func(l string) {
		b.WriteString(strings.Repeat(" ", 6-min(6, len(l))))
		b.WriteString(l)
		b.WriteByte('\t')
	}
	gutter(label)
	count, chunk, start := 0, 0, 0
	for i := range line {
		if count == max {
			b.WriteString(line[start:i])
			b.WriteByte('\n')
			chunk++
			gutter(label + "." + strconv.Itoa(chunk))
			start, count = i, 0
		}
		count++
	}
	b.WriteString(line[start:])
}
