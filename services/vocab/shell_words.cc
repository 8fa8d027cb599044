#include "services/vocab/shell_words.h"

namespace lazaret::vocab {

absl::StatusOr<std::vector<std::string>> SplitShellWords(absl::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has started (possibly empty, from quotes)
  size_t i = 0;
  const size_t n = text.size();
  auto end_word = [&] {
    if (in_word) words.push_back(std::move(word));
    word.clear();
    in_word = false;
  };
  while (i < n) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      end_word();
      ++i;
    } else if (c == '#' && !in_word) {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '\\') {
      if (i + 1 >= n) return absl::InvalidArgumentError("trailing backslash");
      if (text[i + 1] != '\n') {
        word.push_back(text[i + 1]);
        in_word = true;
      }
      i += 2;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError("unterminated single quote");
      }
      word.append(text.data() + i + 1, close - i - 1);
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        const char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < n &&
            (text[i + 1] == '$' || text[i + 1] == '`' || text[i + 1] == '"' ||
             text[i + 1] == '\\' || text[i + 1] == '\n')) {
          if (text[i + 1] != '\n') word.push_back(text[i + 1]);
          i += 2;
          continue;
        }
        word.push_back(d);
        ++i;
      }
      if (!closed) return absl::InvalidArgumentError("unterminated double quote");
      in_word = true;
    } else {
      word.push_back(c);
      in_word = true;
      ++i;
    }
  }
  end_word();
  return words;
}

}  // namespace lazaret::vocab
