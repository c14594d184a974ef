package openai_test

import (
	"context"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// A model on api.openai.com, with the key in OPENAI_API_KEY.
func ExampleNew() {
	m, err := openai.New(openai.Config{
		Model:     "gpt-4.1-mini",
		MaxTokens: 4096,
		Retry:     retry.Policy{MaxRetries: 5, Max: time.Minute},
	})
	if err != nil {
		panic(err)
	}
	_ = m // pass it as agent.Config.Model
}

// A reasoning model on the Responses API, so that its reasoning persists
// between tool calls, asked to think hard. CheckSettings tells before any
// call which settings the model refuses or will not get.
func ExampleConfig_responses() {
	m, err := openai.New(openai.Config{Model: "gpt-5", API: openai.APIResponses})
	if err != nil {
		panic(err)
	}
	temp := 0.2
	settings := llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}, Temperature: &temp}
	dropped, err := m.CheckSettings(settings)
	fmt.Printf("%v %v %+v\n", dropped, err, m.Capabilities())
	// Output: [temperature] <nil> {Images:true Reasoning:true}
}

// A local Ollama server that cannot stream tool calls.
func ExampleNewCompatible() {
	m, err := openai.NewCompatible("http://localhost:11434/v1", "qwen3:8b", openai.Config{
		Provider:          "ollama",
		NoStreamToolCalls: true,
	})
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("Hello")}})
	if err != nil {
		fmt.Println(err) // e.g. "ollama: network error: ..." when nothing listens
		return
	}
	fmt.Println(resp.Message.Content)
}

// StrictSchema turns an ordinary schema into one strict structured outputs
// accept.
func ExampleStrictSchema() {
	out, err := openai.StrictSchema([]byte(`{"type":"object","properties":{"title":{"type":"string"},"year":{"type":"integer"}},"required":["title"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"type":"object","properties":{"title":{"type":"string"},"year":{"type":["integer","null"]}},"required":["title","year"],"additionalProperties":false}
}
