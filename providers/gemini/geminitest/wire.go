package geminitest

import "encoding/json"

// The v1beta REST wire format of generateContent, written from the API
// reference independently of the SDK, so that a mapping mistake in the SDK
// or the provider shows up as a mismatch here.

// GenerateContentRequest is the body of models/{model}:generateContent and
// :streamGenerateContent.
type GenerateContentRequest struct {
	Contents          []Content                  `json:"contents"`
	SystemInstruction *Content                   `json:"systemInstruction,omitempty"`
	Tools             []Tool                     `json:"tools,omitempty"`
	ToolConfig        *ToolConfig                `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig          `json:"generationConfig,omitempty"`
	SafetySettings    []json.RawMessage          `json:"safetySettings,omitempty"`
	CachedContent     string                     `json:"cachedContent,omitempty"`
	Other             map[string]json.RawMessage `json:"-"`
}

// Content is one turn: role "user" or "model" and its parts.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn. Exactly one data field (text, functionCall,
// functionResponse, inlineData, ...) should be set; Text is a pointer so an
// explicit empty text is told apart from none.
type Part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"` // base64
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	ExecutableCode   json.RawMessage   `json:"executableCode,omitempty"`
	CodeResult       json.RawMessage   `json:"codeExecutionResult,omitempty"`
}

// TextOf returns the part's text ("" when it has none).
func (p Part) TextOf() string {
	if p.Text == nil {
		return ""
	}
	return *p.Text
}

// FunctionCall is a model's call of a declared function.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// Blob is inline media: a MIME type and base64 data.
type Blob struct {
	MIMEType    string `json:"mimeType"`
	Data        string `json:"data"`
	DisplayName string `json:"displayName,omitempty"`
}

// FileData is media by URI.
type FileData struct {
	MIMEType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// FunctionResponse answers a FunctionCall. Parts carry media (images) of
// the response, which Gemini 3 and later accept.
type FunctionResponse struct {
	ID       string                 `json:"id,omitempty"`
	Name     string                 `json:"name"`
	Response map[string]any         `json:"response"`
	Parts    []FunctionResponsePart `json:"parts,omitempty"`
}

// FunctionResponsePart is one medium of a function response.
type FunctionResponsePart struct {
	InlineData *Blob     `json:"inlineData,omitempty"`
	FileData   *FileData `json:"fileData,omitempty"`
}

// Tool holds function declarations (other tool kinds are kept raw).
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations,omitempty"`
	CodeExecution        json.RawMessage       `json:"codeExecution,omitempty"`
	GoogleSearch         json.RawMessage       `json:"googleSearch,omitempty"`
}

// FunctionDeclaration declares one function. Parameters is the OpenAPI
// subset; ParametersJSONSchema is plain JSON schema; at most one is set.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// ToolConfig constrains function calling.
type ToolConfig struct {
	FunctionCallingConfig *FunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

// FunctionCallingConfig is the mode (AUTO, ANY, NONE, VALIDATED) and, for
// ANY, the allowed functions.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig holds sampling, length and output-format settings.
type GenerationConfig struct {
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMIMEType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *ThinkingConfig `json:"thinkingConfig,omitempty"`
	CandidateCount     int             `json:"candidateCount,omitempty"`
}

// ThinkingConfig controls thinking models.
type ThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// GenerateContentResponse is a whole response, or one SSE chunk of a stream.
type GenerateContentResponse struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
}

// Candidate is one generated answer.
type Candidate struct {
	Content       *Content `json:"content,omitempty"`
	FinishReason  string   `json:"finishReason,omitempty"`
	FinishMessage string   `json:"finishMessage,omitempty"`
	Index         int      `json:"index"`
}

// PromptFeedback reports a blocked prompt.
type PromptFeedback struct {
	BlockReason        string `json:"blockReason,omitempty"`
	BlockReasonMessage string `json:"blockReasonMessage,omitempty"`
}

// UsageMetadata counts tokens; in a stream each chunk has the running total.
type UsageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount,omitempty"`
}

// ErrorBody is the google.rpc.Status error envelope: {"error": {...}}.
type ErrorBody struct {
	Error ErrorStatus `json:"error"`
}

// ErrorStatus is a google.rpc.Status.
type ErrorStatus struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status,omitempty"`
	Details []map[string]any `json:"details,omitempty"`
}
