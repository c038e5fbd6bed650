// The approval card's question and answers: Approve and Deny, and the
// forms of the rule choices and of a deny with a reason. Declining is always
// at hand; nothing that approves takes focus or answers a key typed before
// it appeared (deliberate.ts).
import { DECISION, type ApprovalRequest, type Decision, type RuleSpec } from '../src/generated/protocol';
import type { DecisionDetails } from '../src/protocol';
import { announce } from './announce';
import { createCard, openCard, setCardControlsDisabled, setCardStatus, type Card } from './cards';
import { deliberateButton, focusInputOnceKeysUp } from './deliberate';
import { h, nextId } from './dom';
import { editAsks, editOf, keptHunks, showEditProposal } from './edits';
import { linkButton, post } from './host';
import { mcpOf, showMcpProposal } from './mcpCalls';
import { readOf, showReadProposal } from './reads';
import { scrollToEnd } from './scroll';
import { callFacts } from './toolCards';
import { getTurn } from './turns';

/** The decisions that keep a rule, each with its form. */
type RuleDecision = Exclude<Decision, typeof DECISION.approve | typeof DECISION.deny>;
/** What a button below Approve and Deny opens: a rule's form, or the reason of a deny. */
type AnswerChoice = RuleDecision | 'denyReason';

interface RuleForm {
  title: string;
  confirm: string;
  verb: string;
}

export function showApproval(p: ApprovalRequest) {
  const turn = getTurn(p.turnId);
  const card = openCard(p.turnId, p.callId) || createCard(turn, p.turnId, p.callId, p.command);
  // The command asked about is the one shown, whatever the card held.
  card.command.textContent = p.command;
  card.command.hidden = false;
  // An edit shows its file and hunks instead of a command's directory, environment and limits.
  const edit = editOf(p);
  const read = readOf(p);
  const mcp = mcpOf(p);
  if (edit) showEditProposal(card, p, edit);
  else if (read) showReadProposal(card, p, read);
  else if (mcp) showMcpProposal(card, p, mcp);
  else card.el.insertBefore(callFacts(p), card.actions);
  card.el.querySelectorAll('.deny-in-reach').forEach((n) => n.remove());
  if (!edit && Array.isArray(p.denyRules) && p.denyRules.length > 0) {
    const names = p.denyRules.map((r) => (r && (r.command || r.pattern)) || '').filter((n) => n).join(', ');
    const note = h('div', 'edit-warning deny-in-reach', 'May reach a program a deny rule refuses (' + names + '): it asks instead of running by itself.');
    note.setAttribute('role', 'note');
    card.el.insertBefore(note, card.actions);
  }

  card.actions.textContent = '';
  card.actionError.hidden = true;
  const question = h('span', 'question', edit ? (edit.newFile ? 'Create this file?' : 'Apply this edit?') : read ? 'Allow this read?' : mcp ? 'Call this MCP tool?' : 'Run this command?');
  question.id = 'mino-el-' + nextId();
  const approve = deliberateButton('primary approve', 'Approve', () => {
    const kept = keptHunks(card);
    decide(card, p.turnId, p.callId, DECISION.approve, kept ? { acceptedHunks: kept } : undefined);
  });
  const deny = deliberateButton('secondary deny', 'Deny', () => decide(card, p.turnId, p.callId, DECISION.deny));
  // The choices that open a form come before Approve and Deny in the DOM
  // (shown below them), so Shift+Tab from the input still reaches Deny first.
  const more = h('div', 'more-actions');
  // Rules exist only where the server reports an approval mode. A command
  // that is not one plain command, or an edit outside the workspace, has no
  // suggested rule: no rule can cover it. An edit's rule is a path rule.
  const rulesOffered = typeof p.approvalMode === 'string';
  const suggested = p.suggestedRule && (p.suggestedRule.kind === 'path' ? p.suggestedRule.pattern : p.suggestedRule.kind === 'mcp' ? p.suggestedRule.tool : p.suggestedRule.command);
  const ruleable = rulesOffered && typeof suggested === 'string';
  // The rule choices, allow and deny alike, are offered only where a rule
  // can cover the call (the same suggestion prefills both).
  // An MCP call's rule is for this tool or every tool of its server (chosen in the form).
  const choices: [AnswerChoice, string][] = mcp
    ? [
        [DECISION.allowSession, 'Allow this tool or its server for session…'],
        [DECISION.allowWorkspace, 'Always allow this tool or its server in workspace…'],
        [DECISION.denySession, 'Deny for session…'],
        [DECISION.denyWorkspace, 'Deny for workspace…'],
        ['denyReason', 'Deny with reason…'],
      ]
    : [
        [DECISION.allowSession, 'Allow for session…'],
        [DECISION.allowWorkspace, 'Always allow in workspace…'],
        [DECISION.denySession, 'Deny for session…'],
        [DECISION.denyWorkspace, 'Deny for workspace…'],
        ['denyReason', 'Deny with reason…'],
      ];
  for (const [choice, label] of choices) {
    const isRule = choice !== 'denyReason';
    if (isRule && !rulesOffered) continue;
    const b = deliberateButton('secondary open-form ' + choice, label, () => openAnswerForm(card, p, choice));
    b.dataset.choice = choice;
    b.setAttribute('aria-describedby', question.id + ' ' + card.command.id);
    if (isRule && !ruleable) {
      b.disabled = true;
      b.dataset.keepDisabled = 'true';
      b.dataset.ruleless = 'true';
    }
    more.appendChild(b);
  }
  if (rulesOffered && !ruleable) {
    more.appendChild(h('span', 'no-rule-note', mcp
      ? 'No rule can name this MCP tool: its call is asked about.'
      : read
      ? 'No rule can cover this read: its path is outside the workspace.'
      : p.edit
      ? 'No rule can cover this edit: its file is outside the workspace.'
      : 'No rule can cover this command: it is not one plain command.'));
  }
  for (const b of [approve, deny]) b.setAttribute('aria-describedby', question.id + ' ' + card.command.id);
  card.actions.append(question, more, approve, deny);
  card.actions.hidden = false;
  // Announced with its command; never focused (see deliberateButton).
  card.el.setAttribute('role', 'group');
  const asks = edit
    ? editAsks(edit)
    : read
    ? 'Mino asks to read outside the workspace: ' + read.path
    : mcp
    ? 'Mino asks to call the tool ' + mcp.tool + ' of the MCP server ' + mcp.server
    : 'Mino asks to run: ' + p.command;
  card.el.setAttribute('aria-label', asks);
  announce(asks + '. Approve or Deny in its card.');
  setCardStatus(card, 'waiting');
  scrollToEnd();
}

/** The decisions that refuse the call (with or without a rule). */
const DENYING = new Set<string>([DECISION.deny, DECISION.denySession, DECISION.denyWorkspace]);

/** `extra`: the `reason` of a deny, the `rule` of allowSession/allowWorkspace/denySession/denyWorkspace. */
function decide(card: Card, turnId: string, callId: string, decision: Decision, extra?: DecisionDetails) {
  // The person answered from the card (its buttons are disabled now, which
  // would drop focus on the page): back to the question they were writing.
  if (card.el.contains(document.activeElement)) focusInputOnceKeysUp();
  setCardControlsDisabled(card, true);
  card.actionError.hidden = true;
  setCardStatus(card, DENYING.has(decision) ? 'denied' : 'approved');
  post({ type: 'approval', turnId, callId, decision, ...(extra || {}) });
}

/** What each rule choice's form says and its confirm button reads. */
const RULE_FORMS: Record<RuleDecision, RuleForm> = {
  allowSession: { title: 'Allow without asking, for the rest of this session:', confirm: 'Allow for session', verb: 'allows' },
  allowWorkspace: { title: 'Always allow in this workspace (kept in its rules file):', confirm: 'Always allow', verb: 'allows' },
  denySession: { title: 'Deny, and refuse without asking for the rest of this session:', confirm: 'Deny for session', verb: 'denies' },
  denyWorkspace: { title: 'Deny, and always refuse in this workspace (kept in its rules file):', confirm: 'Deny for workspace', verb: 'denies' },
};

/**
 * The inline form of "Allow for session…", "Always allow in workspace…",
 * "Deny for session…", "Deny for workspace…" or "Deny with reason…": the
 * rule (prefilled with the server's suggestion, editable, prefix or exact)
 * or the reason. A deny rule's form denies the call: it never approves.
 * The person just chose it, so its text field takes focus; its confirm
 * button never does, and only a deliberate click (or Enter/Space pressed on
 * it) confirms. Enter in the text field confirms nothing.
 */
function openAnswerForm(card: Card, p: ApprovalRequest, choice: AnswerChoice) {
  const old = card.actions.querySelector('.answer-form');
  if (old) old.remove();
  for (const b of card.actions.querySelectorAll('.open-form')) b.setAttribute('aria-expanded', String(b === card.actions.querySelector('.open-form.' + choice)));
  const isDeny = choice === 'denyReason';
  // Read only on a rule's form (denyReason has none).
  const ruleForm = (RULE_FORMS as Record<string, RuleForm>)[choice];
  // Present whenever a rule's form can open: its button is disabled without one.
  const suggestedRule = p.suggestedRule as RuleSpec;
  const denies = isDeny || DENYING.has(choice);
  const formEl = h('div', 'answer-form ' + choice);
  formEl.setAttribute('role', 'group');
  const titleId = 'mino-el-' + nextId();
  const heading = h('div', 'answer-form-title', isDeny ? 'Deny, and tell Mino why:' : ruleForm.title);
  heading.id = titleId;
  formEl.setAttribute('aria-labelledby', titleId);
  formEl.appendChild(heading);
  const error = h('div', 'answer-form-error');
  error.setAttribute('role', 'alert');
  error.hidden = true;
  let field: HTMLInputElement;
  let answer: () => DecisionDetails | null;
  if (isDeny) {
    field = h('input', 'deny-reason');
    field.type = 'text';
    field.placeholder = 'Reason (Mino reads it)';
    field.setAttribute('aria-label', 'Reason for denying');
    formEl.appendChild(field);
    answer = () => {
      const reason = field.value.trim();
      return reason ? { reason } : {};
    };
  } else if (suggestedRule.kind === 'mcp') {
    // An MCP rule: this tool (`server/tool`, the narrower and the default) or every tool of its server (`server/*`).
    const tool = String(suggestedRule.tool);
    const server = tool.split('/')[0];
    const kinds = h('div', 'rule-kinds mcp-rule-kinds');
    kinds.setAttribute('role', 'radiogroup');
    kinds.setAttribute('aria-label', 'What the rule ' + ruleForm.verb);
    const group = 'mino-rule-kind-' + nextId();
    const radios: HTMLInputElement[] = [];
    for (const [value, label] of [[tool, 'this tool (' + tool + ')'], [server + '/*', 'every tool of the MCP server ' + server]]) {
      const lab = h('label', 'rule-kind');
      const radio = h('input', 'mcp-rule-tool');
      radio.type = 'radio';
      radio.name = group;
      radio.value = value;
      radio.checked = value === tool;
      radios.push(radio);
      lab.append(radio, ' ' + label);
      kinds.appendChild(lab);
    }
    formEl.appendChild(kinds);
    field = radios[0];
    if (p.approvalMode === 'ask') {
      formEl.appendChild(h('div', 'answer-form-note', 'The approval mode is ask: this call ' +
        (denies ? 'is denied' : 'is made') + ' now and the rule is kept, but later calls use it only once the mode is rules.'));
      formEl.appendChild(linkButton('Change the approval mode…', { type: 'setApprovalMode' }, 'answer-form-mode'));
    }
    answer = () => {
      const picked = radios.find((r) => r.checked);
      return { rule: { kind: 'mcp', tool: picked ? picked.value : tool } };
    };
  } else if (suggestedRule.kind === 'path') {
    // A path rule: a glob relative to the session's directory, no kinds to choose.
    field = h('input', 'rule-command rule-pattern');
    field.type = 'text';
    field.value = suggestedRule.pattern as string;
    field.spellcheck = false;
    field.setAttribute('aria-label', 'Files the rule ' + ruleForm.verb + ' edits of (a glob such as src/**/*.rs)');
    formEl.appendChild(field);
    answer = () => {
      const pattern = field.value.trim();
      if (!pattern) {
        error.textContent = 'Enter the files the rule ' + ruleForm.verb + ' (a glob such as src/**/*.rs).';
        error.hidden = false;
        return null;
      }
      return { rule: { kind: 'path', pattern } };
    };
  } else {
    const prefill: Record<'prefix' | 'exact', string> = { prefix: suggestedRule.command as string, exact: p.command };
    let kind: 'prefix' | 'exact' = 'prefix';
    const kinds = h('div', 'rule-kinds');
    kinds.setAttribute('role', 'radiogroup');
    kinds.setAttribute('aria-label', 'Rule kind');
    const radios: HTMLInputElement[] = [];
    const group = 'mino-rule-kind-' + nextId();
    const kindChoices: ['prefix' | 'exact', string][] = [['prefix', 'commands starting with'], ['exact', 'exactly this command']];
    for (const [value, label] of kindChoices) {
      const lab = h('label', 'rule-kind');
      const radio = h('input');
      radio.type = 'radio';
      radio.name = group;
      radio.value = value;
      radio.checked = value === kind;
      radio.addEventListener('change', () => {
        if (!radio.checked) return;
        // An untouched prefill follows the kind; an edited rule stays as written.
        if (field.value === prefill[kind]) field.value = prefill[value];
        kind = value;
      });
      radios.push(radio);
      lab.append(radio, ' ' + label);
      kinds.appendChild(lab);
    }
    formEl.appendChild(kinds);
    field = h('input', 'rule-command');
    field.type = 'text';
    field.value = prefill[kind];
    field.spellcheck = false;
    field.setAttribute('aria-label', 'Command the rule ' + ruleForm.verb);
    formEl.appendChild(field);
    if (p.approvalMode === 'ask') {
      formEl.appendChild(h('div', 'answer-form-note', 'The approval mode is ask: this command ' +
        (denies ? 'is denied' : 'runs') + ' now and the rule is kept, but later commands use it only once the mode is rules.'));
      // The way to that mode: Set Approval Mode, which asks (it never switches by itself).
      formEl.appendChild(linkButton('Change the approval mode…', { type: 'setApprovalMode' }, 'answer-form-mode'));
    }
    answer = () => {
      const command = field.value.trim();
      if (!command) {
        error.textContent = 'Enter the command the rule ' + ruleForm.verb + '.';
        error.hidden = false;
        return null;
      }
      return { rule: { kind, command } };
    };
  }
  field.addEventListener('input', () => (error.hidden = true));
  formEl.appendChild(error);
  const confirmLabel = isDeny ? 'Deny' : ruleForm.confirm;
  const confirm = deliberateButton((denies ? 'secondary' : 'primary') + ' confirm-answer', confirmLabel, () => {
    const extra = answer();
    if (extra === null) return;
    decide(card, p.turnId, p.callId, isDeny ? DECISION.deny : (choice as RuleDecision), extra);
  });
  confirm.setAttribute('aria-describedby', titleId + ' ' + card.command.id);
  const back = h('button', 'secondary close-form', 'Back');
  back.type = 'button';
  const close = () => {
    formEl.remove();
    const opener = card.actions.querySelector<HTMLElement>('.open-form.' + choice);
    opener?.setAttribute('aria-expanded', 'false');
    opener?.focus({ preventScroll: true });
  };
  back.addEventListener('click', close);
  // Escape leaves the form (not the turn: the view's Escape cancels a running turn).
  formEl.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.stopPropagation();
      close();
    }
  });
  const buttons = h('div', 'answer-form-buttons');
  buttons.append(confirm, back);
  formEl.appendChild(buttons);
  card.actions.appendChild(formEl);
  field.focus({ preventScroll: true });
  scrollToEnd();
}
