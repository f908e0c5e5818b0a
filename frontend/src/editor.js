// The student page's code editor: CodeMirror 6 over the page's <textarea>, which stays
// the form field (without JavaScript the page submits the textarea as it is).
import {EditorState} from "@codemirror/state";
import {EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  drawSelection} from "@codemirror/view";
import {defaultKeymap, history, historyKeymap, indentWithTab} from "@codemirror/commands";
import {indentOnInput, bracketMatching, syntaxHighlighting, defaultHighlightStyle,
  indentUnit} from "@codemirror/language";
import {python} from "@codemirror/lang-python";

// The page's Content-Security-Policy allows styles from 'self' and this nonce only.
const nonce = document.querySelector("meta[name='csp-nonce']")?.content || "";

function attach(textarea) {
  const label = document.querySelector(`label[for="${textarea.id}"]`);
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), highlightActiveLine(), drawSelection(),
        history(), indentOnInput(), bracketMatching(), indentUnit.of("    "),
        syntaxHighlighting(defaultHighlightStyle), python(), EditorView.cspNonce.of(nonce),
        // Tab indents; Escape then Tab leaves the editor (keyboard users are not trapped).
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) textarea.value = update.state.doc.toString();
        }),
        EditorView.contentAttributes.of({
          "aria-label": label ? label.textContent.trim() : "Code",
          "data-testid": "code-editor-content",
        }),
      ],
    }),
  });
  view.dom.id = textarea.id + "-editor";
  view.dom.setAttribute("data-testid", "code-editor");
  textarea.insertAdjacentElement("afterend", view.dom);
  textarea.hidden = true;
  textarea.setAttribute("aria-hidden", "true");
  if (label) label.addEventListener("click", () => view.focus());
  // The form submits the textarea: keep it exact even if an update was skipped.
  if (textarea.form) {
    textarea.form.addEventListener("submit", () => {
      textarea.value = view.state.doc.toString();
    });
  }
  // Tests and helpers can set the editor's text through the textarea's element.
  textarea.jaxjudgeSetCode = (code) => {
    view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: code}});
  };
  return view;
}

for (const textarea of document.querySelectorAll("textarea[data-editor='python']")) {
  attach(textarea);
}
