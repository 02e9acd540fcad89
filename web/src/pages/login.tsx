/** The login page: the API's read token (or admin token), checked against /api/status before it is kept. */
import { useState } from "preact/hooks";
import { getJson, setToken, UnauthorizedError } from "../api.js";

export function LoginPage({ onLogin }: { onLogin: () => void }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await getJson("/api/status", value.trim());
      setToken(value.trim());
      onLogin();
    } catch (err) {
      setError(err instanceof UnauthorizedError ? "This token was refused. Use the API read token (kubectl -n gitmesh get secret gitmesh-api-tokens -o jsonpath='{.data.read}' | base64 -d), or the demo's api-token file." : `The server did not answer: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <h1>gitmesh</h1>
      <p>Sign in with an API token. A read-only token is enough: this UI never changes anything.</p>
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" required value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
        <button type="submit" disabled={busy || value.trim() === ""}>
          Sign in
        </button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </main>
  );
}
