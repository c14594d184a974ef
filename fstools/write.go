package fstools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

type writeArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

func writeTool(Options) tool.Tool {
	return define("write_file",
		"Create a file or replace all its content. Parent directories are implied. For changes to part of a file use edit_file.",
		`{"type":"object","properties":{"file_path":{"type":"string","description":"File to write."},"content":{"type":"string","description":"The complete new content."}},"required":["file_path","content"],"additionalProperties":false}`,
		runWrite)
}

func runWrite(ctx context.Context, fs vfs.Backend, in writeArgs) (tool.Result, error) {
	p, bad := cleanPath(in.FilePath, "")
	if bad != nil {
		return *bad, nil
	}
	if p == "/" {
		return tool.Errorf("Error: / is the root directory, not a file. Give a file path such as /notes.md."), nil
	}
	existed := false
	if e, err := fs.Stat(ctx, p); err == nil {
		if e.IsDir {
			return isDirError(p), nil
		}
		existed = true
	}
	switch err := fs.Write(ctx, p, in.Content); {
	case err == nil:
	case errors.Is(err, vfs.ErrIsDir):
		return isDirError(p), nil
	case errors.Is(err, vfs.ErrNotDir):
		return notDirError(ctx, fs, p), nil
	default:
		return failed(ctx, "writing "+p, err)
	}
	verb := "Created"
	if existed {
		verb = "Replaced"
	}
	return tool.Text(fmt.Sprintf("%s %s (%s, %s).", verb, p, plural(countLines(in.Content), "line"), plural(len(in.Content), "byte"))), nil
}

func isDirError(p string) tool.Result {
	return tool.Errorf("Error: %s is a directory, so it cannot be written as a file. Choose a file path such as %s/file.txt.", p, p)
}

func notDirError(ctx context.Context, fs vfs.Backend, p string) tool.Result {
	if f := fileAncestor(ctx, fs, p); f != "" {
		return tool.Errorf("Error: cannot write %s because %s is a file, not a directory. Choose another path, or delete %s first.", p, f, f)
	}
	return tool.Errorf("Error: cannot write %s because a parent of it is a file, not a directory. Choose another path.", p)
}

type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func editTool(Options) tool.Tool {
	return define("edit_file",
		"Replace exact text in a file; read it first. old_string must occur exactly once unless replace_all is true: include more surrounding lines to make it unique. Copy text from read_file output without the line-number gutter. Says how many replacements were made.",
		`{"type":"object","properties":{"file_path":{"type":"string","description":"File to edit."},"old_string":{"type":"string","description":"Exact text to replace."},"new_string":{"type":"string","description":"Replacement text."},"replace_all":{"type":"boolean","description":"Replace every occurrence.","default":false}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`,
		runEdit)
}

// gutterRe matches a read_file line-number prefix at the start of a line.
var gutterRe = regexp.MustCompile(`(?m)^ *[0-9]+(\.[0-9]+)?\t`)

func runEdit(ctx context.Context, fs vfs.Backend, in editArgs) (tool.Result, error) {
	p, bad := cleanPath(in.FilePath, "")
	if bad != nil {
		return *bad, nil
	}
	if in.OldString == "" {
		return tool.Errorf("Error: old_string is empty. Give the exact text to replace; to write a whole file use write_file."), nil
	}
	if in.OldString == in.NewString {
		return tool.Errorf("Error: old_string and new_string are identical, so the edit would change nothing. Give the new text in new_string."), nil
	}
	content, err := fs.Read(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: file %s does not exist. Use ls or glob to find the right path, or write_file to create it.", p), nil
	case errors.Is(err, vfs.ErrIsDir):
		return tool.Errorf("Error: %s is a directory, not a file. Use ls to list it.", p), nil
	default:
		return failed(ctx, "reading "+p, err)
	}
	oldS, newS := in.OldString, in.NewString
	n := strings.Count(content, oldS)
	if n == 0 && strings.Contains(content, "\r\n") && strings.Contains(oldS, "\n") {
		// read_file shows CRLF lines without their \r; retry with the file's
		// line endings.
		o2, n2 := toCRLF(oldS), toCRLF(newS)
		if o2 != oldS && o2 != n2 {
			if c := strings.Count(content, o2); c > 0 {
				oldS, newS, n = o2, n2, c
			}
		}
	}
	switch {
	case n == 0:
		hint := ""
		if gutterRe.MatchString(oldS) {
			hint = " old_string seems to include read_file's line-number gutter (spaces, number, tab); leave it out."
		}
		return tool.Errorf("Error: old_string was not found in %s.%s Read the file again with read_file and copy the text exactly, including whitespace and indentation, without the line-number gutter.", p, hint), nil
	case n > 1 && !in.ReplaceAll:
		return tool.Errorf("Error: old_string occurs %d times in %s, but it must be unique. Include more surrounding lines in old_string to pick one occurrence, or set replace_all to true to replace all %d.", n, p, n), nil
	}
	limit := 1
	if in.ReplaceAll {
		limit = -1
	}
	updated := strings.Replace(content, oldS, newS, limit)
	switch err := fs.Write(ctx, p, updated); {
	case err == nil:
	case errors.Is(err, vfs.ErrIsDir):
		return isDirError(p), nil
	case errors.Is(err, vfs.ErrNotDir):
		return notDirError(ctx, fs, p), nil
	default:
		return failed(ctx, "writing "+p, err)
	}
	if !in.ReplaceAll {
		n = 1
	}
	return tool.Text(fmt.Sprintf("Replaced %s in %s.", plural(n, "occurrence"), p)), nil
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

type deleteArgs struct {
	FilePath string `json:"file_path"`
}

func deleteTool(Options) tool.Tool {
	return define("delete",
		"Delete a file, or a directory and every file below it. The root / cannot be deleted.",
		`{"type":"object","properties":{"file_path":{"type":"string","description":"File or directory to delete."}},"required":["file_path"],"additionalProperties":false}`,
		runDelete)
}

func runDelete(ctx context.Context, fs vfs.Backend, in deleteArgs) (tool.Result, error) {
	p, bad := cleanPath(in.FilePath, "")
	if bad != nil {
		return *bad, nil
	}
	if p == "/" {
		return tool.Errorf("Error: refusing to delete / because that would remove every file. Delete specific files or directories instead."), nil
	}
	e, err := fs.Stat(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: nothing exists at %s, so there is nothing to delete. Use ls or glob to check the path.", p), nil
	default:
		return failed(ctx, "deleting "+p, err)
	}
	n, err := fs.Delete(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: nothing exists at %s, so there is nothing to delete. Use ls or glob to check the path.", p), nil
	default:
		return failed(ctx, "deleting "+p, err)
	}
	if !e.IsDir {
		return tool.Text("Deleted file " + p + "."), nil
	}
	return tool.Text(fmt.Sprintf("Deleted directory %s: %s removed.", p, plural(n, "file"))), nil
}
