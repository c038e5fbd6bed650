// Images pasted (clipboard) or dropped (files) into the composer are read
// here as base64 and shown as thumbnail chips above the input; they go with
// the question as `mino/chat` `images`. The bounds are the server's, so a
// refused image is refused here by name before anything is sent; the text
// and the other attachments stay. History shows a question's images as
// thumbnails, their bytes asked for by SHA-256 (`mino/image`, through the host).
import type { ChatImage } from '../src/generated/protocol';
import { showComposerError } from './composerStatus';
import { $, focusInput, form, h, input } from './dom';
import { imageSize } from './format';
import { keepSentImages, questionImages, type QuestionImage } from './questionImages';
import { turns } from './turns';
import { state } from './viewState';

// The server's bounds (server/protocol/src/lib.rs; they are not in the generated types):
/** `MAX_IMAGES`: the most images one question carries. */
const MAX_IMAGES = 8;
/** `MAX_IMAGE_BYTES`: the largest image (20 MiB). */
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
/** `MAX_QUESTION_IMAGE_BYTES`: the most image bytes of one question together (32 MiB). */
const MAX_QUESTION_IMAGE_BYTES = 32 * 1024 * 1024;

/** An image of the question being written: `data` is its bytes in base64. */
interface ImageItem {
  name: string;
  mimeType: string;
  size: number;
  data: string;
}

export const imageItems: ImageItem[] = [];
const imageChips = $('image-chips');
/** Images read but not yet added (reading is asynchronous): counted against the bounds. */
let imagesReading = 0;

/** The type the first bytes say (the server tells images the same way), or null. */
function sniffImageType(bytes: Uint8Array): string | null {
  const starts = (sig: number[], at = 0) => sig.every((b, i) => bytes[at + i] === b);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts([0x47, 0x49, 0x46, 0x38])) return 'image/gif';
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return null;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + step) as unknown as number[]);
  }
  return btoa(binary);
}

function imageBytesTotal(): number {
  return imageItems.reduce((sum, item) => sum + item.size, 0);
}

/**
 * Adds pasted or dropped files as images, each checked against the
 * server's bounds; the refused ones are named with why, below the input.
 */
async function addImageFiles(files: File[]) {
  const refused: string[] = [];
  let reserved = 0;
  const reading: File[] = [];
  for (const file of files) {
    const name = file.name || 'pasted image';
    if (imageItems.length + imagesReading + reading.length >= MAX_IMAGES) {
      refused.push(name + ' was not added: a question may carry at most ' + MAX_IMAGES + ' images.');
    } else if (file.size > MAX_IMAGE_BYTES) {
      refused.push(name + ' is ' + imageSize(file.size) + '; an image may be at most 20 MiB: scale it down or crop it.');
    } else if (imageBytesTotal() + reserved + file.size > MAX_QUESTION_IMAGE_BYTES) {
      refused.push(name + ' was not added: the images of a question may be at most 32 MiB together.');
    } else {
      reserved += file.size;
      reading.push(file);
    }
  }
  imagesReading += reading.length;
  try {
    for (const file of reading) {
      const name = file.name || 'pasted image';
      let bytes: Uint8Array;
      try {
        bytes = new Uint8Array(await file.arrayBuffer());
      } catch {
        refused.push(name + ' could not be read.');
        continue;
      } finally {
        imagesReading--;
      }
      const mimeType = sniffImageType(bytes);
      if (!mimeType) {
        refused.push(name + ' is not an image Mino can send; PNG, JPEG, GIF and WebP are accepted.');
        continue;
      }
      imageItems.push({ name: file.name || 'pasted.' + mimeType.slice('image/'.length), mimeType, size: bytes.length, data: bytesToBase64(bytes) });
    }
  } finally {
    renderImageChips();
    showComposerError(refused.length ? refused.join('\n') : null);
  }
}

function renderImageChips() {
  imageChips.textContent = '';
  imageItems.forEach((item, i) => {
    const label = item.name + ' (' + imageSize(item.size) + ')';
    const chip = h('li', 'chip image-chip');
    chip.title = label;
    const img = h('img', 'image-thumb');
    img.src = 'data:' + item.mimeType + ';base64,' + item.data;
    img.alt = '';
    chip.appendChild(img);
    chip.appendChild(h('span', 'chip-label', item.name));
    chip.appendChild(h('span', 'image-size', imageSize(item.size)));
    const remove = h('button', 'chip-remove', '×');
    remove.type = 'button';
    remove.setAttribute('aria-label', 'Remove ' + label);
    remove.addEventListener('click', () => {
      if (state.pendingQuestion !== null) return;
      imageItems.splice(i, 1);
      renderImageChips();
      focusInput();
    });
    chip.appendChild(remove);
    imageChips.appendChild(chip);
  });
  imageChips.hidden = imageItems.length === 0;
}

/** Mino: New Question: a fresh question has no images (not while one is being sent). */
export function clearImages() {
  if (state.pendingQuestion !== null) return;
  imageItems.length = 0;
  renderImageChips();
}

/** The question's images as `mino/chat` takes them. */
export function chatImages(): ChatImage[] {
  return imageItems.map((item) => ({ data: item.data, mimeType: item.mimeType, name: item.name }));
}

/** The question was accepted: its images leave the input for its turn. */
export function imagesSent(turnId: string) {
  if (imageItems.length === 0) return;
  const shown: QuestionImage[] = imageItems.map((item) => ({ name: item.name, mimeType: item.mimeType, size: item.size, dataUrl: 'data:' + item.mimeType + ';base64,' + item.data }));
  imageItems.length = 0;
  renderImageChips();
  const turn = typeof turnId === 'string' ? turns.get(turnId) : undefined;
  if (turn) {
    const user = turn.el.querySelector('.msg.user');
    if (user && !user.querySelector('.question-images')) user.appendChild(questionImages(shown));
  } else if (typeof turnId === 'string') {
    keepSentImages(turnId, shown);
  }
}

function imageFilesOf(dt: DataTransfer | null): File[] {
  if (!dt) return [];
  const files: File[] = [];
  if (dt.items && dt.items.length) {
    for (const item of dt.items) {
      if (item.kind !== 'file') continue;
      const file = item.getAsFile();
      if (file) files.push(file);
    }
  } else if (dt.files) {
    files.push(...dt.files);
  }
  return files;
}

function canAddImages(): boolean {
  return !input.disabled && state.pendingQuestion === null;
}

input.addEventListener('paste', (event) => {
  const files = imageFilesOf(event.clipboardData);
  // Pasted text is the textarea's own business.
  if (files.length === 0) return;
  event.preventDefault();
  if (canAddImages()) void addImageFiles(files);
});

const hasFiles = (event: DragEvent) => !!event.dataTransfer && Array.from(event.dataTransfer.types || []).includes('Files');
form.addEventListener('dragover', (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  if (event.dataTransfer) event.dataTransfer.dropEffect = canAddImages() ? 'copy' : 'none';
  form.classList.add('dropping');
});
form.addEventListener('dragleave', () => form.classList.remove('dropping'));
form.addEventListener('drop', (event) => {
  form.classList.remove('dropping');
  if (!hasFiles(event)) return;
  event.preventDefault();
  if (canAddImages()) void addImageFiles(imageFilesOf(event.dataTransfer));
});
