package openai

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// imageTypes are the image media types the API reads.
var imageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
}

// imageURL returns the URL the API takes for img: its own http(s) URL, or a
// base64 data URL of its bytes. It refuses, in plain words, an image the API
// would reject (unknown media type, no data, a URL of another scheme) and any
// image at all for a model that reads none.
func (m *Model) imageURL(img *llm.Image) (string, error) {
	if img == nil {
		return "", fmt.Errorf("an image part has no image")
	}
	if !m.Capabilities().Images {
		return "", fmt.Errorf("model %s reads no images; send the image as a description instead", m.cfg.Model)
	}
	if img.URL != "" {
		if strings.HasPrefix(img.URL, "https://") || strings.HasPrefix(img.URL, "http://") {
			return img.URL, nil
		}
		rest, ok := strings.CutPrefix(img.URL, "data:")
		if !ok {
			return "", fmt.Errorf("image URL %q is neither http(s) nor a data URL", shorten(img.URL))
		}
		mt, payload, ok := strings.Cut(rest, ";base64,")
		if !ok || !imageTypes[mt] {
			return "", fmt.Errorf("image data URL %q is not a base64 png, jpeg, gif or webp image", shorten(img.URL))
		}
		if _, err := base64.StdEncoding.DecodeString(payload); err != nil || payload == "" {
			return "", fmt.Errorf("image data URL %q holds no valid base64", shorten(img.URL))
		}
		return img.URL, nil
	}
	mt := strings.ToLower(strings.TrimSpace(img.MediaType))
	if !imageTypes[mt] {
		return "", fmt.Errorf("image type %q is not one the API reads (png, jpeg, gif, webp)", img.MediaType)
	}
	if len(img.Data) == 0 {
		return "", fmt.Errorf("an image part of type %s has neither data nor URL", mt)
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(img.Data), nil
}

// shorten cuts a URL for an error message.
func shorten(s string) string {
	if len(s) <= 80 {
		return s
	}
	return strings.ToValidUTF8(s[:80], "") + "…"
}

// reasoningEffort is the effort to send for s, checked like CheckSettings.
func (m *Model) reasoningEffort(s llm.Settings) (string, error) {
	if _, err := m.CheckSettings(s); err != nil {
		return "", &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: m.provider, Message: "invalid request: " + strings.TrimPrefix(err.Error(), m.provider+": ")}
	}
	return effort(s.Reasoning)
}
