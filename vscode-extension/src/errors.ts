/** What went wrong, in words: the leaf every room of the extension words its errors with. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
