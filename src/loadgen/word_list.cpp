#include "loadgen/word_list.h"

namespace ember::loadgen {

std::span<const std::string_view> prompt_words() {
  static constexpr std::string_view kWords[] = {
      "the",     "of",     "and",   "to",      "in",     "is",      "that",    "for",   "it",    "as",    "was",
      "with",    "be",     "by",    "on",      "not",    "he",      "this",    "are",   "or",    "his",   "from",
      "at",      "which",  "but",   "have",    "an",     "had",     "they",    "you",   "were",  "their", "one",
      "all",     "we",     "can",   "her",     "has",    "there",   "been",    "if",    "more",  "when",  "will",
      "would",   "who",    "so",    "no",      "she",    "other",   "its",     "may",   "these", "about", "them",
      "than",    "some",   "time",  "into",    "only",   "do",      "first",   "any",   "new",   "very",  "my",
      "also",    "people", "like",  "could",   "our",    "what",    "out",     "over",  "such",  "most",  "after",
      "made",    "many",   "said",  "before",  "two",    "must",    "through", "back",  "years", "where", "much",
      "your",    "way",    "well",  "down",    "should", "because", "each",    "just",  "those", "how",   "too",
      "little",  "state",  "good",  "water",   "make",   "world",   "still",   "own",   "see",   "men",   "work",
      "long",    "get",    "here",  "between", "both",   "life",    "being",   "under", "never", "day",   "same",
      "another", "know",   "while", "last",    "might",  "us",      "great",   "old",
  };
  return kWords;
}

}  // namespace ember::loadgen
