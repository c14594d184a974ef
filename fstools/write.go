package fstools

import (
	"context"
	"encoding/json"
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
		runWrite, tool.WithInline())
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
		runEdit, tool.WithInline())
}

// gutterRe matches a read_file line-number prefix at the start of a line.
var gutterRe = regexp.MustCompile(`(?m)^ *[0-9]+(\.[0-9]+)?\t`)

// editRefusal carries out of an update the answer to an edit the model
// must fix (text not found, not unique...); nothing is written.
type editRefusal struct{ res tool.Result }

func (e *editRefusal) Error() string { return e.res.Content }

func refuse(format string, args ...any) *editRefusal {
	return &editRefusal{tool.Errorf(format, args...)}
}

// runEdit changes the file in one atomic update where the backend offers
// one (vfs.Update), so parallel edits of one file, or edits by two
// processes of one directory, each apply to the other's result instead of
// overwriting it.
func runEdit(ctx context.Context, fs vfs.Backend, in editArgs) (tool.Result, error) {
	p, bad := cleanPath(in.FilePath, "")
	if bad != nil {
		return *bad, nil
	}
	if in.OldString == in.NewString {
		return tool.Errorf("Error: old_string and new_string are identical, so the edit would change nothing. Give the new text in new_string."), nil
	}
	var n int
	var filled bool
	err := vfs.Update(ctx, fs, p, func(content string) (string, error) {
		updated, count, refusal := applyEdit(p, content, in)
		if refusal != nil {
			return "", refusal
		}
		n, filled = count, in.OldString == ""
		return updated, nil
	})
	var ref *editRefusal
	switch {
	case err == nil:
	case errors.As(err, &ref):
		return ref.res, nil
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: file %s does not exist. Use ls or glob to find the right path, or write_file to create it.", p), nil
	case errors.Is(err, vfs.ErrIsDir):
		return tool.Errorf("Error: %s is a directory, not a file. Use ls to list it.", p), nil
	case errors.Is(err, vfs.ErrConflict):
		return tool.Errorf("Error: %s was changed by someone else while this edit was being made, so the edit was not applied. Read the file again with read_file and redo the edit on its current content.", p), nil
	case errors.Is(err, vfs.ErrNotDir):
		return notDirError(ctx, fs, p), nil
	default:
		return failed(ctx, "editing "+p, err)
	}
	if filled {
		return tool.Text(fmt.Sprintf("Wrote new_string (%s, %s) into the empty file %s.", plural(countLines(in.NewString), "line"), plural(len(in.NewString), "byte"), p)), nil
	}
	return tool.Text(fmt.Sprintf("Replaced %s in %s.", plural(n, "occurrence"), p)), nil
}

// applyEdit computes an edit of content: the new content and how many
// occurrences were replaced, or why the edit cannot be made.
func applyEdit(p, content string, in editArgs) (string, int, *editRefusal) {
	oldS, newS := in.OldString, in.NewString
	if oldS == "" {
		if content == "" {
			// Filling an empty file is the one edit with nothing to find.
			return newS, 1, nil
		}
		return "", 0, refuse("Error: old_string is empty, which is only allowed when the file is empty, and %s is not. Give the exact text to replace; to replace the whole file use write_file.", p)
	}
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
		if hint := nearMiss(content, oldS); hint != "" {
			return "", 0, refuse("Error: old_string was not found in %s exactly, but %s", p, hint)
		}
		hint := ""
		if gutterRe.MatchString(oldS) {
			hint = " old_string seems to include read_file's line-number gutter (spaces, number, tab); leave it out."
		}
		return "", 0, refuse("Error: old_string was not found in %s.%s Read the file again with read_file and copy the text exactly, including whitespace and indentation, without the line-number gutter.", p, hint)
	case n > 1 && !in.ReplaceAll:
		return "", 0, refuse("Error: old_string occurs %d times in %s, but it must be unique. Include more surrounding lines in old_string to pick one occurrence, or set replace_all to true to replace all %d.", n, p, n)
	}
	limit := 1
	if in.ReplaceAll {
		limit = -1
	} else {
		n = 1
	}
	return strings.Replace(content, oldS, newS, limit), n, nil
}

// nearMiss explains why old, which does not occur in content, almost does:
// it would occur without its final line break, or if line endings (CRLF
// versus LF) were ignored. It returns "" when neither is so.
func nearMiss(content, old string) string {
	times := func(n int) string {
		if n == 1 {
			return "once"
		}
		return fmt.Sprintf("%d times", n)
	}
	trimmed := strings.TrimSuffix(old, "\n")
	trimmed = strings.TrimSuffix(trimmed, "\r")
	if trimmed != old && trimmed != "" {
		n := strings.Count(content, trimmed)
		if n == 0 && strings.Contains(content, "\r\n") {
			n = strings.Count(content, toCRLF(trimmed))
		}
		if n > 0 {
			return fmt.Sprintf("without its final line break it occurs %s: old_string ends with a line break that the file does not have at that point (for instance on the file's last line). Send old_string without that final line break, and new_string without one unless you mean to add it.", times(n))
		}
	}
	lfContent, lfOld := toLF(content), toLF(old)
	if n := strings.Count(lfContent, lfOld); n > 0 {
		if strings.Contains(old, "\r\n") && !strings.Contains(content, "\r\n") {
			return fmt.Sprintf("with LF line endings it occurs %s: old_string has Windows line endings (CRLF, \\r\\n) where the file has Unix ones (LF, \\n). Send old_string with \\n line endings only.", times(n))
		}
		if strings.Contains(content, "\r\n") && !strings.Contains(strings.ReplaceAll(content, "\r\n", ""), "\n") {
			return fmt.Sprintf("with the file's Windows line endings (CRLF, \\r\\n) it occurs %s, and new_string then differs from it only in line endings. The edit keeps the file's line endings; to change only line endings, rewrite the file with write_file.", times(n))
		}
		return fmt.Sprintf("it occurs %s if line endings are ignored: the file mixes Windows (CRLF, \\r\\n) and Unix (LF, \\n) line endings, and old_string's line endings differ from the file's in that text. Edit one line at a time (old_string without line breaks), or rewrite the file with write_file.", times(n))
	}
	if lfTrimmed := strings.TrimSuffix(lfOld, "\n"); lfTrimmed != lfOld && lfTrimmed != "" {
		if n := strings.Count(lfContent, lfTrimmed); n > 0 {
			return fmt.Sprintf("it occurs %s without its final line break and with line endings (CRLF versus LF) ignored. Send old_string without the final line break, and edit one line at a time if it still does not match.", times(n))
		}
	}
	return ""
}

func toLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

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

// ChangingTools are the file tools whose calls change a file: each call
// names it in file_path (see ChangedPath).
var ChangingTools = []string{"write_file", "edit_file", "delete"}

// ChangedPath says which path a call of the file tool name changes, from
// its arguments: the path as the model wrote it, and whether the call
// deletes it (else it writes the file there). ok is false for a tool that
// changes no file and for arguments without a file_path string; the call
// itself reports what is wrong with them. Approval gates use it to look at a
// call before it runs.
func ChangedPath(name string, args json.RawMessage) (path string, del, ok bool) {
	switch name {
	case "write_file", "edit_file":
	case "delete":
		del = true
	default:
		return "", false, false
	}
	var in struct {
		FilePath *string `json:"file_path"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.FilePath == nil {
		return "", false, false
	}
	return *in.FilePath, del, true
}
