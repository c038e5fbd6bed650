//! Which commands a rule may match at all: the command as bash would parse
//! it, reduced to the static words of each plain simple command, or refused.
//!
//! Parsing is `brush-parser`'s (the parser of the brush shell: bash syntax
//! including here-docs, process substitution, extglob and arithmetic, and
//! kept up to date). The decision of what is *plain* is ours, and it is
//! conservative: anything we cannot reduce to words known before bash runs
//! is refused, and a refused command is never matched by a rule (the person
//! is asked).

use brush_parser::ast::{self, Command, CommandPrefixOrSuffixItem, SeparatorOperator};
use brush_parser::word::WordPiece;
use brush_parser::ParserOptions;

/// Longer commands are not analysed (the person is asked): parsing cost stays
/// bounded whatever the model sends.
pub const MAX_ANALYSED_LEN: usize = 16 * 1024;

/// Why a command is not a list of plain simple commands. Each names what the
/// person would have to approve by hand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotPlain {
    #[error("the command is empty")]
    Empty,
    #[error("the command is longer than {MAX_ANALYSED_LEN} bytes")]
    TooLong,
    #[error("bash could not parse the command: {0}")]
    Syntax(String),
    #[error("the command contains a comment or a line continuation")]
    CommentOrContinuation,
    #[error("the command runs something in the background (`&`)")]
    Background,
    #[error("the command uses `!` or `time` on a pipeline")]
    PipelineModifier,
    #[error("the command contains a compound command (subshell, group, loop, if, case, function, `[[`)")]
    Compound,
    #[error("the command has a redirection or a here-document")]
    Redirection,
    #[error("the command sets a variable (`NAME=value`)")]
    Assignment,
    #[error("the command uses process substitution")]
    ProcessSubstitution,
    #[error("the word `{0}` is expanded by bash (variable, command substitution, glob, brace, tilde or escape)")]
    Expansion(String),
}

/// One plain simple command: its words exactly as bash would pass them to
/// `execve` (after quote removal), known without running anything.
pub type Words = Vec<String>;

/// Reduces `command` to the words of each simple command in it, joined only
/// by `;`, newlines, `&&`, `||` and `|`; anything else is [`NotPlain`].
///
/// Quoting is removed as bash removes it: `git "status"` is the words `git`,
/// `status`, the same as `git status` (bash runs the same thing). Words that
/// bash would change (`$VAR`, `$(…)`, backticks, `*`, `?`, `[…]`, `{a,b}`,
/// `~`, extglob, ANSI-C quoting, unquoted `#`, `!`) make the command not plain.
pub fn plain_commands(command: &str) -> Result<Vec<Words>, NotPlain> {
    if command.len() > MAX_ANALYSED_LEN {
        return Err(NotPlain::TooLong);
    }
    if command.trim().is_empty() {
        return Err(NotPlain::Empty);
    }
    // A NUL would end the string bash receives; treat it as not analysable.
    if command.contains('\0') {
        return Err(NotPlain::Syntax("the command contains a NUL byte".into()));
    }
    // A `\`-newline continuation is removed by bash before it splits words;
    // rather than trust that every tokenizer does exactly the same, ask.
    if command.contains("\\\n") {
        return Err(NotPlain::CommentOrContinuation);
    }
    let options = ParserOptions::default();
    // The parser is not ours; a panic in it must mean "ask", never a crash.
    let parsed = std::panic::catch_unwind(|| -> Result<ast::Program, NotPlain> {
        let tokens = brush_parser::uncached_tokenize_str(command, &options.tokenizer_options())
            .map_err(|e| NotPlain::Syntax(e.to_string()))?;
        check_nothing_dropped(command, &tokens)?;
        brush_parser::parse_tokens(&tokens, &options).map_err(|e| NotPlain::Syntax(e.to_string()))
    })
    .map_err(|_| NotPlain::Syntax("the parser failed on this command".into()))??;

    let mut parts = Vec::new();
    for list in &parsed.complete_commands {
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            if matches!(separator, SeparatorOperator::Async) {
                return Err(NotPlain::Background);
            }
            for (_, pipeline) in and_or.iter() {
                if pipeline.bang || pipeline.timed.is_some() {
                    return Err(NotPlain::PipelineModifier);
                }
                for command in &pipeline.seq {
                    parts.push(simple_words(command, &options)?);
                }
            }
        }
    }
    if parts.is_empty() {
        return Err(NotPlain::Empty);
    }
    Ok(parts)
}

/// The tokenizer drops comments and `\`-newline continuations silently; the
/// source outside the tokens must be plain blanks, or something was dropped.
/// (A comment is harmless to bash, but what the person sees and what runs
/// should be the same text; when in doubt, ask.)
fn check_nothing_dropped(command: &str, tokens: &[brush_parser::Token]) -> Result<(), NotPlain> {
    let chars: Vec<char> = command.chars().collect();
    let mut covered = vec![false; chars.len()];
    for token in tokens {
        let span = match token {
            brush_parser::Token::Operator(_, span) | brush_parser::Token::Word(_, span) => span,
        };
        let end = span.end.index.min(chars.len());
        for slot in covered.iter_mut().take(end).skip(span.start.index) {
            *slot = true;
        }
    }
    let dropped = chars.iter().zip(&covered).any(|(c, covered)| !covered && !matches!(c, ' ' | '\t' | '\n'));
    if dropped {
        Err(NotPlain::CommentOrContinuation)
    } else {
        Ok(())
    }
}

fn simple_words(command: &Command, options: &ParserOptions) -> Result<Words, NotPlain> {
    let simple = match command {
        Command::Simple(simple) => simple,
        Command::Compound(..) | Command::Function(_) | Command::ExtendedTest(..) => return Err(NotPlain::Compound),
    };
    if let Some(item) = simple.prefix.as_ref().and_then(|prefix| prefix.0.first()) {
        return Err(item_refusal(item));
    }
    let Some(name) = &simple.word_or_name else {
        return Err(NotPlain::Empty);
    };
    let mut words = vec![static_word(&name.value, options)?];
    if let Some(suffix) = &simple.suffix {
        for item in &suffix.0 {
            match item {
                CommandPrefixOrSuffixItem::Word(word) => words.push(static_word(&word.value, options)?),
                other => return Err(item_refusal(other)),
            }
        }
    }
    Ok(words)
}

fn item_refusal(item: &CommandPrefixOrSuffixItem) -> NotPlain {
    match item {
        CommandPrefixOrSuffixItem::IoRedirect(_) => NotPlain::Redirection,
        CommandPrefixOrSuffixItem::AssignmentWord(..) => NotPlain::Assignment,
        CommandPrefixOrSuffixItem::ProcessSubstitution(..) => NotPlain::ProcessSubstitution,
        CommandPrefixOrSuffixItem::Word(word) => NotPlain::Expansion(word.value.clone()),
    }
}

/// Characters that bash gives a meaning to in an unquoted word (globs, brace
/// expansion, extglob, tilde, history, comments, and everything the
/// tokenizer should already have split off). Refused rather than reasoned
/// about: a quoted word carries them literally and is fine.
const UNQUOTED_SPECIAL: &[char] =
    &['*', '?', '[', ']', '{', '}', '~', '!', '#', '$', '`', '\\', '"', '\'', '(', ')', '<', '>', '|', '&', ';', '='];

/// The word as bash passes it on, or the reason it cannot be known statically.
fn static_word(raw: &str, options: &ParserOptions) -> Result<String, NotPlain> {
    let refuse = || NotPlain::Expansion(raw.to_owned());
    let pieces = brush_parser::word::parse(raw, options).map_err(|_| refuse())?;
    let mut word = String::new();
    for piece in pieces {
        match piece.piece {
            WordPiece::Text(text) => {
                // `=` is only special before the command word, where the
                // parser already made it an assignment; elsewhere
                // (`--name=value`) it is literal.
                if text.chars().any(|c| c != '=' && UNQUOTED_SPECIAL.contains(&c)) {
                    return Err(refuse());
                }
                word.push_str(&text);
            }
            WordPiece::SingleQuotedText(text) => word.push_str(&text),
            WordPiece::DoubleQuotedSequence(inner) => {
                for piece in inner {
                    match piece.piece {
                        WordPiece::Text(text) => {
                            // Inside double quotes only `$`, backticks and
                            // `\` are special, and those came as other pieces.
                            if text.contains(['$', '`', '\\']) {
                                return Err(refuse());
                            }
                            word.push_str(&text);
                        }
                        WordPiece::EscapeSequence(escape) => {
                            word.push_str(&double_quoted_escape(&escape).ok_or_else(refuse)?)
                        }
                        _ => return Err(refuse()),
                    }
                }
            }
            WordPiece::EscapeSequence(escape) => {
                // `\x` unquoted is `x`; `\`-newline (a continuation) was
                // already refused, anything longer is not understood.
                let mut chars = escape.chars();
                match (chars.next(), chars.next(), chars.next()) {
                    (Some('\\'), Some(c), None) if c != '\n' => word.push(c),
                    _ => return Err(refuse()),
                }
            }
            _ => return Err(refuse()),
        }
    }
    Ok(word)
}

/// In double quotes a backslash escapes only `$`, `` ` ``, `"`, `\` and
/// newline; before anything else it stays.
fn double_quoted_escape(escape: &str) -> Option<String> {
    let mut chars = escape.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some('\\'), Some(c @ ('$' | '`' | '"' | '\\')), None) => Some(c.to_string()),
        (Some('\\'), Some('\n'), None) => None,
        (Some('\\'), Some(c), None) => Some(format!("\\{c}")),
        _ => None,
    }
}
