// The packaged .vsix in real VS Code (code-server), as a person uses it:
// the real mino-server (started by vscode-languageclient, which appends
// --stdio), the mock model at the HTTP wire, Debian's chromium. One editor for
// the whole story; each step leaves a screenshot in test-output/.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Editor, MockModel, TIMEOUT, records } from '../lib/harness.mjs';

let mock;
let editor;
let view;
/** Set once the view is ready: without it every later step would only wait out its timeout. */
let opened = false;

const card = (callId) => view.locator(`.tool-card[data-call-id="${callId}"]`);
const status = (callId, s) => view.locator(`.tool-card[data-call-id="${callId}"][data-status="${s}"]`);
const lastAnswer = (text) => view.locator('.turn').last().locator('.assistant-text', { hasText: text });

async function ask(text) {
  await view.locator('#send:not([disabled])').waitFor();
  await view.locator('#input').fill(text);
  await view.locator('#input').press('Enter');
}

function journalKinds(kind) {
  return editor.journals().flatMap((f) => records(f)).filter((r) => r.kind === kind);
}

describe('the packaged extension in real VS Code', { concurrency: false }, () => {
  before(async () => {
    mock = await MockModel.start();
    editor = await Editor.launch({ mock, name: 'suite' });
  });

  after(async () => {
    await editor?.close();
    mock?.stop();
  });

  it('opens the view from the activity bar and the server starts (vscode-languageclient appends --stdio)', async () => {
    view = await editor.openView();
    // Ready, or the view says why not (a server that refused to start).
    await view.locator('#send:not([disabled]), .status.failed').first().waitFor();
    const failed = view.locator('.status.failed');
    assert.equal(await failed.count(), 0, `the server did not start: ${await failed.textContent().catch(() => '')}`);
    // The real server, started by the extension host, is serving.
    assert.equal(editor.serverPids().length, 1, 'one mino-server runs for this editor');
    assert.equal(await view.locator('.status.failed').count(), 0);
    await editor.shot('01-view-open');
    opened = true;
  });

  it('asks a question and shows the streamed answer', async (t) => {
    if (!opened) return t.skip('the view did not open');
    await mock.script([{ type: 'text', deltas: ['Hello', ' from', ' the model.'] }]);
    await ask('Say hello');
    await lastAnswer('Hello from the model.').waitFor();
    await editor.shot('02-answer');
  });

  it('approves a command from its card; it runs in the workspace', async (t) => {
    if (!opened) return t.skip('the view did not open');
    await mock.script([
      { type: 'calls', calls: [{ call_id: 'call_cmd', command: 'echo approved-in-vscode > made.txt' }] },
      { type: 'text', deltas: ['Made it.'] },
    ]);
    await ask('Make the file');
    await status('call_cmd', 'waiting').waitFor();
    await editor.shot('03-command-card');
    await card('call_cmd').getByRole('button', { name: 'Approve', exact: true }).click();
    await status('call_cmd', 'success').waitFor();
    await lastAnswer('Made it.').waitFor();
    assert.equal(readFileSync(path.join(editor.dirs.workspace, 'made.txt'), 'utf8'), 'approved-in-vscode\n');
    await editor.shot('04-command-approved');
  });

  it("reviews an edit in VS Code's diff editor, then approves it", async (t) => {
    if (!opened) return t.skip('the view did not open');
    const file = path.join(editor.dirs.workspace, 'shopping.txt');
    writeFileSync(file, 'bread\nbutter\njam\n');
    await mock.script([
      { type: 'named_call', call_id: 'call_edit', name: 'edit_file',
        arguments: JSON.stringify({ path: 'shopping.txt', old_text: 'jam', new_text: 'jam\nmilk' }) },
      { type: 'text', deltas: ['Milk added.'] },
    ]);
    await ask('Add milk');
    await status('call_edit', 'waiting').waitFor();
    await card('call_edit').getByRole('button', { name: 'Review diff' }).click();
    // VS Code's own diff editor, in the workbench (not in the webview).
    const diff = editor.page.locator('.monaco-diff-editor');
    await diff.waitFor();
    await diff.locator('.editor.modified .view-line', { hasText: 'milk' }).waitFor();
    assert.equal(await diff.locator('.editor.original .view-line', { hasText: 'milk' }).count(), 0);
    assert.equal(readFileSync(file, 'utf8'), 'bread\nbutter\njam\n', 'reviewing changes nothing');
    await editor.shot('05-diff-editor');
    await card('call_edit').getByRole('button', { name: 'Approve', exact: true }).click();
    await status('call_edit', 'success').waitFor();
    await lastAnswer('Milk added.').waitFor();
    assert.equal(readFileSync(file, 'utf8'), 'bread\nbutter\njam\nmilk\n');
    await editor.shot('06-edit-approved');
  });

  it('Enter and Space typed into the input while a card arrives approve nothing', async (t) => {
    if (!opened) return t.skip('the view did not open');
    const before = journalKinds('approval').length;
    await mock.script([
      { type: 'calls', delay_ms: 800, calls: [{ call_id: 'call_typed', command: 'touch typed-ahead.txt' }] },
      { type: 'text', deltas: ['Not run.'] },
    ]);
    await ask('Touch a file');
    const input = view.locator('#input');
    // Keep typing the keys that would answer a focused button until the card is there, and after.
    while (!(await status('call_typed', 'waiting').count())) {
      await input.press('Space');
      await input.press('Enter');
    }
    for (let i = 0; i < 5; i++) {
      await editor.page.keyboard.press('Enter');
      await editor.page.keyboard.press('Space');
    }
    assert.equal(await view.evaluate(() => document.activeElement?.id), 'input', 'the card took no focus');
    assert.equal(await status('call_typed', 'waiting').count(), 1, 'still waiting for approval');
    assert.equal(journalKinds('approval').length, before, 'no approval recorded');
    await editor.shot('07-type-ahead');
    // Declining is a deliberate act too; the command never ran.
    await card('call_typed').getByRole('button', { name: 'Deny', exact: true }).click();
    await view.locator('.tool-card[data-call-id="call_typed"]:not([data-status="waiting"])').waitFor();
    await view.locator('.turn[data-status]:not([data-status="running"])').last().waitFor();
    assert.ok(!readFileSync(path.join(editor.dirs.workspace, 'made.txt'), 'utf8').includes('typed'));
    assert.throws(() => readFileSync(path.join(editor.dirs.workspace, 'typed-ahead.txt')));
  });

  it('starts a new chat and switches back to the first session from Mino: Sessions', async (t) => {
    if (!opened) return t.skip('the view did not open');
    await editor.command('Mino: New Chat');
    await view.locator('.turn').first().waitFor({ state: 'detached' });
    await mock.script([{ type: 'text', deltas: ['Second session here.'] }]);
    await ask('Second session question');
    await lastAnswer('Second session here.').waitFor();
    await editor.shot('08-new-session');

    await editor.command('Mino: Sessions');
    // The first session is named after its first question.
    const row = editor.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Say hello' });
    await row.first().click();
    await view.locator('.assistant-text', { hasText: 'Hello from the model.' }).waitFor();
    await view.locator('.assistant-text', { hasText: 'Milk added.' }).waitFor();
    assert.equal(await view.locator('.assistant-text', { hasText: 'Second session here.' }).count(), 0);
    await editor.shot('09-switched-back');
  });

  it('SIGKILL of mino-server mid-command: restart, the gate asks once, one recovery_ack is recorded', async (t) => {
    if (!opened) return t.skip('the view did not open');
    await mock.script([
      // No reply after it: the server dies before it would ask again (replies queue up in the mock).
      { type: 'calls', calls: [{ call_id: 'call_long', command: 'echo started; sleep 120' }] },
    ]);
    await ask('Run the long job');
    await status('call_long', 'waiting').waitFor();
    await card('call_long').getByRole('button', { name: 'Approve', exact: true }).click();
    await status('call_long', 'running').waitFor();
    // "running" is shown after tool_start was synced: the journal says the command started.
    assert.ok(journalKinds('tool_start').some((r) => r.call_id === 'call_long'), 'tool_start of call_long recorded');
    const [pid] = editor.serverPids();
    assert.ok(pid, 'the server runs');
    process.kill(pid, 'SIGKILL');
    await view.locator('.status.crashed').waitFor();
    await editor.shot('10-server-killed');

    await view.locator('.status.crashed').getByRole('button', { name: 'Restart' }).click();
    const gate = view.locator('#ack-gate:not([hidden])');
    await gate.waitFor().catch(async (e) => {
      // What the person would have seen instead, and what the disk holds.
      await editor.shot('11-no-gate');
      const shown = await view.locator('body').innerText().catch(() => '(the view could not be read)');
      const journals = editor.journals().map((f) => `${path.basename(f)}: ${records(f).map((r) => r.kind).join(' ')}`);
      throw new Error(`${e.message}\nthe view shows:\n${shown}\njournals:\n${journals.join('\n')}\nservers: ${editor.serverPids().join(' ') || 'none'}`);
    });
    // The gate never takes focus, and keys typed into the input do not answer it.
    assert.notEqual(await view.evaluate(() => document.activeElement?.id), 'ack-yes');
    await view.locator('#input').press('Enter');
    await view.locator('#input').press('Space');
    assert.equal(journalKinds('recovery_ack').length, 0, 'no key acknowledged');
    await editor.shot('11-recovery-gate');
    await view.locator('#ack-yes').click();
    await view.locator('#ack-gate[hidden]').waitFor({ state: 'attached' });
    assert.equal(journalKinds('recovery_ack').length, 1, 'exactly one recovery_ack');
    assert.equal(journalKinds('recovery_ack')[0].turn_id, journalKinds('tool_start').find((r) => r.call_id === 'call_long').turn_id);
    // Chat works again.
    await mock.script([{ type: 'text', deltas: ['Back again.'] }]);
    await ask('Are you back?');
    await lastAnswer('Back again.').waitFor();
    assert.equal(journalKinds('recovery_ack').length, 1, 'still exactly one recovery_ack');
    await editor.shot('12-after-recovery');
  });
});
